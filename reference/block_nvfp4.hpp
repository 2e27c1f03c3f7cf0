#pragma once
// The block's NVFP4 linear: activations (bf16 values) and weights quantised
// with reference/numerics/nvfp4.hpp, each with a dynamic global amax over the
// whole tensor (the activation amax over every token of the stage input, as
// a production run quantises the whole batch), output rounded to bf16.
#include <cstdint>
#include <string>

#include "core/tensor.hpp"

namespace ts::blk {

// y[rows, N] = nvfp4(x[rows, K]) nvfp4(w[N, K])ᵀ (+ b), rounded to bf16.
// Work is cut into row chunks of `chunk_rows` sharing the global activation
// amax, so temporaries stay small; the bits do not depend on the chunking.
void nvfp4_linear(const double* x, int64_t rows, int64_t K, const Tensor& w, const Tensor* b,
                  const std::string& recipe, int64_t chunk_rows, double* y);

}  // namespace ts::blk
