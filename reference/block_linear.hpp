#pragma once
// The block's linear layers: Y = X Wᵀ (+ b), W in [out, in] layout.
//   fp64 : float64 products and sums.
//   bf16 : X and W rounded to bf16, products exact in float32, float32 sums,
//          (+ b in float32), output rounded to bf16.
//   nvfp4: both operands NVFP4-quantised (reference/numerics/nvfp4.hpp, recipe
//          te | modelopt, dynamic activation amax over the whole stage input),
//          output rounded to bf16.
// Every output element's sum runs in one fixed order (lane l of L takes the
// indices k ≡ l mod L, lanes combined pairwise), whatever the tiling, chunking
// or thread count: the same bits on every machine.
#include <cstdint>
#include <string>
#include <vector>

#include "core/tensor.hpp"
#include "reference/block.hpp"

namespace ts::blk {

struct LinearSpec {
  LinearMode mode = LinearMode::fp64;
  std::string recipe = "te";
  int64_t chunk_tokens = 32;
};

// x: `rows` rows of K contiguous values; w: [N, K]; b: [N] or null.
// Returns a tensor of out_shape (product rows * N).
Tensor linear_stage(const double* x, int64_t rows, int64_t K, const Tensor& w, const Tensor* b,
                    const LinearSpec& spec, std::vector<int64_t> out_shape);

// The fixed-order dot products themselves (exposed for tests): y[i*N + j] =
// sum_k x[i*K + k] * w[j*K + k].
void gemm_f64(const double* x, int64_t rows, const double* w, int64_t N, int64_t K, double* y);
void gemm_f32(const float* x, int64_t rows, const float* w, int64_t N, int64_t K, float* y);

}  // namespace ts::blk
