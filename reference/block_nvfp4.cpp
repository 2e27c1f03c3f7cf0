#include "reference/block_nvfp4.hpp"

#include <algorithm>
#include <vector>

#include "reference/block_stages.hpp"
#include "reference/numerics/nvfp4.hpp"

namespace ts::blk {

void nvfp4_linear(const double* x, int64_t rows, int64_t K, const Tensor& w, const Tensor* b,
                  const std::string& recipe, int64_t chunk_rows, double* y) {
  const int64_t N = w.dim(0);
  num::Nvfp4Options opt;
  opt.recipe = num::nvfp4_recipe_from_name(recipe);

  std::vector<float> wf(static_cast<size_t>(N * K));
  for (size_t i = 0; i < wf.size(); ++i) wf[i] = bf16_round_f64(w.data[i]);
  const num::Nvfp4Tensor wq = num::nvfp4_quantize(wf.data(), N, K, opt);
  wf = {};

  // The activation amax of the whole stage input (what dynamic scaling sees).
  float amax = 0.0f;
  {
    std::vector<float> row(static_cast<size_t>(K));
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t k = 0; k < K; ++k) row[static_cast<size_t>(k)] = bf16_round_f64(x[r * K + k]);
      amax = std::max(amax, num::nvfp4_amax(row.data(), K));
    }
  }
  opt.static_amax = amax;

  std::vector<float> bias;
  num::Nvfp4GemmOptions gopt;
  gopt.round_to_bf16 = true;
  if (b) {
    bias.resize(static_cast<size_t>(N));
    for (int64_t j = 0; j < N; ++j) bias[static_cast<size_t>(j)] = bf16_round_f64(b->data[static_cast<size_t>(j)]);
    gopt.bias = bias.data();
  }
  // Row chunks big enough for nvfp4_gemm's own threads to share.
  const int64_t chunk = std::max<int64_t>(chunk_rows, 1024);
  std::vector<float> xf, yf;
  for (int64_t r0 = 0; r0 < rows; r0 += chunk) {
    const int64_t nr = std::min(chunk, rows - r0);
    xf.resize(static_cast<size_t>(nr * K));
    yf.resize(static_cast<size_t>(nr * N));
    for (int64_t i = 0; i < nr * K; ++i) xf[static_cast<size_t>(i)] = bf16_round_f64(x[r0 * K + i]);
    const num::Nvfp4Tensor xq = num::nvfp4_quantize(xf.data(), nr, K, opt);
    num::nvfp4_gemm(xq, wq, yf.data(), gopt);
    for (int64_t i = 0; i < nr * N; ++i) y[r0 * N + i] = yf[static_cast<size_t>(i)];
  }
}

}  // namespace ts::blk
