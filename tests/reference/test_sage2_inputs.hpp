#pragma once
// Small attention inputs for the sage2 and sol tests, built here so the tests
// do not depend on the fixture synthesiser, plus a naive float64 attention.
//
// Every value is k / 2^m with |k| <= 255: exact in bf16, and float32 sums of
// up to a few thousand of them are exact, so block means do not depend on the
// order of summation (the sol perturbation test relies on that).
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "core/tensor.hpp"
#include "reference/attention_problem.hpp"
#include "reference/numerics/convert.hpp"

namespace ts::testing {

struct Inputs {
  Tensor q, k, v;
  std::vector<Segment> segments;
  double softmax_scale = 0.0;

  AttentionProblem problem() const {
    AttentionProblem p;
    p.q = BSHDView::of(q);
    p.k = BSHDView::of(k);
    p.v = BSHDView::of(v);
    p.segments = segments;
    p.softmax_scale = softmax_scale;
    return p;
  }
};

// One video segment of S tokens unless segments are given.
inline Inputs make_inputs(int64_t S, int64_t H, int64_t D, uint64_t seed,
                          std::vector<Segment> segments = {}) {
  std::mt19937_64 gen(seed);
  // k / 2^shift, k uniform in [-255, 255]: mt19937_64's output is specified.
  auto draw = [&](int shift) {
    const int64_t k = static_cast<int64_t>(gen() % 511) - 255;
    return std::ldexp(static_cast<double>(k), -shift);
  };
  Inputs in;
  in.q = Tensor({S, H, D}, DType::bf16);
  in.k = Tensor({S, H, D}, DType::bf16);
  in.v = Tensor({S, H, D}, DType::bf16);
  for (auto& x : in.q.data) x = draw(7);  // [-2, 2]
  for (auto& x : in.k.data) x = draw(7);
  for (auto& x : in.v.data) x = draw(6);  // [-4, 4]
  // A per-(head, channel) key bias, as real keys have: what K smoothing removes.
  for (int64_t h = 0; h < H; ++h)
    for (int64_t d = 0; d < D; ++d) {
      const double bias = std::ldexp(static_cast<double>(static_cast<int64_t>(gen() % 9) - 4), -1);
      for (int64_t s = 0; s < S; ++s) {
        double& x = in.k.data[(s * H + h) * D + d];
        x = num::bf16_round(static_cast<float>(x + bias));  // multiples of 2^-7 stay so
      }
    }
  if (segments.empty()) segments.push_back({"video", true, 0, S});
  in.segments = std::move(segments);
  in.softmax_scale = 1.0 / std::sqrt(static_cast<double>(D));
  return in;
}

// Softmax attention in float64 over every key.
inline Tensor naive_attention(const Inputs& in) {
  const int64_t S = in.q.dim(0), H = in.q.dim(1), D = in.q.dim(2);
  Tensor out({S, H, D}, DType::f64);
  std::vector<double> s(static_cast<size_t>(S));
  for (int64_t h = 0; h < H; ++h)
    for (int64_t i = 0; i < S; ++i) {
      double m = -1e300;
      for (int64_t j = 0; j < S; ++j) {
        double dot = 0;
        for (int64_t d = 0; d < D; ++d)
          dot += in.q.data[(i * H + h) * D + d] * in.k.data[(j * H + h) * D + d];
        s[j] = dot * in.softmax_scale;
        m = std::max(m, s[j]);
      }
      double l = 0;
      for (int64_t j = 0; j < S; ++j) l += (s[j] = std::exp(s[j] - m));
      for (int64_t d = 0; d < D; ++d) {
        double acc = 0;
        for (int64_t j = 0; j < S; ++j) acc += s[j] * in.v.data[(j * H + h) * D + d];
        out.data[(i * H + h) * D + d] = acc / l;
      }
    }
  return out;
}

inline double rel_l2(const Tensor& a, const Tensor& b) {
  double num = 0, den = 0;
  for (size_t i = 0; i < a.data.size(); ++i) {
    const double d = a.data[i] - b.data[i];
    num += d * d;
    den += b.data[i] * b.data[i];
  }
  return std::sqrt(num / den);
}

inline bool all_finite(const Tensor& t) {
  for (double x : t.data)
    if (!std::isfinite(x)) return false;
  return true;
}

}  // namespace ts::testing
