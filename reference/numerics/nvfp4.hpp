#pragma once
// NVFP4 linear layer (docs/emulation.md "The NVFP4 linear layer"): 1x16 blocks along K with E4M3 block
// scales and a float32 global scale, and the GEMM Y = X W^T on two quantised
// operands. Every float32 operation below happens in the order written in the
// comments of nvfp4.cpp; docs/spec-deviations.md "NVFP4" lists the choices the
// spec leaves open.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "reference/numerics/nvfp4_block.hpp"

namespace ts::num {

const char* nvfp4_recipe_name(Nvfp4Recipe r);
Nvfp4Recipe nvfp4_recipe_from_name(const std::string& name);  // throws InputError

struct Nvfp4Options {
  Nvfp4Recipe recipe = Nvfp4Recipe::te;
  // Global scale source. Neither set: dynamic amax of the tensor. static_amax:
  // a calibrated amax used in place of the measured one (elements beyond it
  // saturate). input_scale: a checkpoint's decode scale S_dec (= amax / 2688);
  // te recipes take S_enc = 1 / input_scale. Setting both is an InputError.
  std::optional<float> static_amax;
  std::optional<float> input_scale;
};

struct Nvfp4Tensor {
  int64_t rows = 0;
  int64_t cols = 0;            // K; need not be a multiple of 16
  int64_t blocks_per_row = 0;  // ceil(cols / 16); the last block is zero-padded
  // rows x (blocks_per_row * 8) bytes: element 2i in the low nibble, 2i + 1 in
  // the high one; padding elements have code 0.
  std::vector<uint8_t> codes;
  // rows x blocks_per_row E4M3 codes of the block decode scales (sign bit 0).
  std::vector<uint8_t> scales;
  Nvfp4Recipe recipe = Nvfp4Recipe::te;
  float amax = 0.0f;   // the amax the global scale came from (0 for input_scale)
  float s_enc = 1.0f;  // global encode scale (modelopt: 1 / s_dec, informational)
  float s_dec = 1.0f;  // global decode scale, the one the GEMM multiplies by

  int64_t row_bytes() const { return blocks_per_row * (kNvfp4Block / 2); }
  uint8_t code(int64_t r, int64_t c) const;      // E2M1 code of element (r, c)
  uint8_t scale_code(int64_t r, int64_t b) const { return scales[static_cast<size_t>(r * blocks_per_row + b)]; }
  float block_scale(int64_t r, int64_t b) const;  // decoded E4M3 block scale
  float value(int64_t r, int64_t c) const;        // (q * float(sb)) * s_dec in float32
};

// The global scales of a tensor whose amax (measured or calibrated) is
// `amax`: what the quantiser uses without input_scale.
struct Nvfp4GlobalScale {
  float amax = 0.0f;
  float s_enc = 1.0f;
  float s_dec = 1.0f;
};
Nvfp4GlobalScale nvfp4_global_scale(float amax, Nvfp4Recipe recipe);

// Largest |x| over n values; NaN elements are ignored (as fmaxf does).
float nvfp4_amax(const float* x, int64_t n);

// Quantise a row-major rows x cols matrix along its rows (K = cols).
// A NaN element encodes as +6 (e2m1_encode's rule); +-Inf saturate to +-6.
Nvfp4Tensor nvfp4_quantize(const float* x, int64_t rows, int64_t cols, const Nvfp4Options& opt = {});
// The same from float64 values (a ts::Tensor's data), each rounded to float32
// first: exact for bf16, fp16 and f32 data.
Nvfp4Tensor nvfp4_quantize(const double* x, int64_t rows, int64_t cols, const Nvfp4Options& opt = {});

// Dequantised matrix (rows x cols) in float32 (value()) or exactly in float64.
void nvfp4_dequantize(const Nvfp4Tensor& t, float* out);
void nvfp4_dequantize(const Nvfp4Tensor& t, double* out);

struct Nvfp4GemmOptions {
  // Accumulate the per-block partial sums in float64 instead of float32.
  bool fp64_accumulate = false;
  // Round the output to bf16 (the activation dtype); false keeps float32.
  bool round_to_bf16 = true;
  // Optional bias [W.rows], added in float32 after the global scaling.
  const float* bias = nullptr;
};

// Y[i, j] = sum_k X[i, k] W[j, k], Y row-major X.rows x W.rows. Each 16-block
// partial sum is exact in float32; the block partials are accumulated in block
// order; then Y = acc * (X.s_dec * W.s_dec) (+ bias), rounded as asked.
// Each output element's arithmetic is fixed, so the bits do not depend on the
// number of OpenMP threads.
void nvfp4_gemm(const Nvfp4Tensor& X, const Nvfp4Tensor& W, float* Y, const Nvfp4GemmOptions& opt = {});

// Test reference: dequantise both exactly in float64 and multiply in float64.
void nvfp4_gemm_reference(const Nvfp4Tensor& X, const Nvfp4Tensor& W, double* Y);

}  // namespace ts::num
