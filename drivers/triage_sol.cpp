#include "drivers/triage_sol.hpp"

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>

#include "core/error.hpp"

namespace ts {

std::vector<double> sol_missed_mass(const AttentionProblem& p, const Tensor& mask, const Tensor& vblocks,
                                    int64_t block_q) {
  const int64_t S = p.q.S, H = p.q.H, D = p.q.D, QB = (S + block_q - 1) / block_q;
  if (mask.rank() != 3 || mask.dim(0) != H || mask.dim(1) != QB || vblocks.rank() != 2 ||
      mask.dim(2) != vblocks.dim(0))
    throw InternalError("sol_missed_mass: route_mask " + mask.shape_string() + " / video_blocks " +
                        vblocks.shape_string() + " do not match the problem");
  const int64_t VB = mask.dim(2);
  std::vector<double> out(size_t(H * QB), 0.0);
  using Mat = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  for (int64_t h = 0; h < H; ++h) {
    Mat K(S, D);
    for (int64_t s = 0; s < S; ++s)
      for (int64_t d = 0; d < D; ++d) K(s, d) = p.k(s, h, d);
#pragma omp parallel for schedule(dynamic, 1)
    for (int64_t i = 0; i < QB; ++i) {
      const int64_t q0 = i * block_q, nr = std::min(block_q, S - q0);
      Mat Q(nr, D);
      for (int64_t r = 0; r < nr; ++r)
        for (int64_t d = 0; d < D; ++d) Q(r, d) = p.q(q0 + r, h, d);
      Mat sc = (Q * K.transpose()) * p.softmax_scale;
      std::vector<uint8_t> out_key(size_t(S), 0);
      for (int64_t j = 0; j < VB; ++j)
        if (mask.data[size_t((h * QB + i) * VB + j)] == 0)
          for (int64_t s = int64_t(vblocks.data[size_t(2 * j)]), e = s + int64_t(vblocks.data[size_t(2 * j + 1)]); s < e; ++s)
            out_key[size_t(s)] = 1;
      double acc = 0;
      for (int64_t r = 0; r < nr; ++r) {
        const double m = sc.row(r).maxCoeff();
        double l = 0, miss = 0;
        for (int64_t s = 0; s < S; ++s) {
          const double e = std::exp(sc(r, s) - m);
          l += e;
          if (out_key[size_t(s)]) miss += e;
        }
        acc += miss / l;
      }
      out[size_t(h * QB + i)] = acc / double(nr);
    }
  }
  return out;
}

}  // namespace ts
