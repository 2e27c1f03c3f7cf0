#pragma once
// The quantisers of SageAttention 2.2.0 as docs/emulation.md "sage2"
// describes them: K smoothing, the two INT8 Q/K recipes (per_warp CUDA
// kernel, per_thread Triton kernel) with the kernels' padded scale layouts,
// and per-channel FP8 V. Used by the sage2 emulation and by sol's int8 variants.
// All data is per head, token-major: x[h][s][d] as float32.
#include <cstdint>
#include <vector>

#include "core/stored_tensor.hpp"
#include "core/tensor.hpp"

namespace ts::sage2 {

enum class Granularity { per_warp, per_thread };

// Float32 copy of one [S, H, D] view, laid out [H][S][D] (each head contiguous).
struct HeadMajor {
  int64_t H = 0, S = 0, D = 0;
  std::vector<float> x;
  float* head(int64_t h) { return x.data() + h * S * D; }
  const float* head(int64_t h) const { return x.data() + h * S * D; }
};
// From the view's values, or where it has none (v.p null) from `stored`, the same [S, H, D]
// elements as a file stores them: the same floats either way.
HeadMajor to_head_major(const BSHDView& v, const StoredTensor* stored = nullptr);

// Rounds a float32 to the element type the kernel's tensors hold (bf16, fp16,
// or float32 unchanged).
float round_to_dtype(float x, DType t);

// km[h][d]: mean of K over all tokens, float32 accumulation in token order,
// times f32(1/S) (torch's CUDA mean multiplies by that factor), rounded to the
// input dtype (torch's k.mean()).
std::vector<float> smoothing_mean(const HeadMajor& k, DType input_dtype);

// Which scale a token uses, and how many scales the kernel's padded array holds.
struct ScaleLayout {
  Granularity g = Granularity::per_warp;
  bool query = true;
  int64_t blk = 128, warp = 32;  // BLKQ/WARPQ for queries, BLKK/WARPK for keys

  int64_t n_scales(int64_t S) const;
  int64_t index(int64_t s) const;
};

// INT8 codes and scales of one quantised Q or K.
struct Int8Tensor {
  int64_t H = 0, S = 0, D = 0, n_scales = 0;
  std::vector<int8_t> codes;      // [H][S][D]
  std::vector<float> scales;      // [H][n_scales], the kernel's padded layout
  std::vector<int32_t> scale_of;  // [S]: index into a head's scales
  const int8_t* head(int64_t h) const { return codes.data() + h * S * D; }
  float scale(int64_t h, int64_t s) const {
    return scales[static_cast<size_t>(h * n_scales + scale_of[static_cast<size_t>(s)])];
  }
};

// Division as the kernels do it. SageAttention's CUDA is built with
// --use_fast_math, so its `a / b` is div.approx.ftz.f32, a * rcp.approx(b);
// Triton lowers a float32 `/` to div.full.f32, the same product (measured).
// gpu_rcp is rcp.approx.ftz.f32: bit-exact (a measured table) for inputs
// whose mantissa fits bf16, as the amax of bf16 data and the constants 127,
// 2.25 and 448 do; the correctly rounded reciprocal otherwise, which the
// hardware's differs from by one ulp on 13 % of mantissas
// (docs/emulation.md "Division on the GPU").
float gpu_rcp(float x);

// Group recipes on a flat list of values (exposed for the rounding tests).
// per_warp: amax starts at 1e-7, scale = amax*rcp(127), code = rni.sat(x * (127*rcp(amax))).
float quant_group_per_warp(const float* x, int64_t n, int8_t* codes);
// per_thread: scale = fma(amax, f32(1/127), 1e-7), code = trunc(x*rcp(scale) + 0.5*sign(x)).
float quant_group_per_thread(const float* x, int64_t n, int8_t* codes);

// Quantises x (already smoothed for K) by `layout`; padded groups without a
// token get the recipe's value for an all-zero group (per_warp 1e-7/127,
// per_thread 1e-7), which is what the kernels' masked (zero) loads give.
Int8Tensor quantize_int8(const HeadMajor& x, const ScaleLayout& layout);

// K − km as each recipe forms it: per_warp in float32 inside the kernel,
// per_thread in the input dtype before the Triton kernel (torch `k - km`).
HeadMajor subtract_mean(const HeadMajor& k, const std::vector<float>& km, Granularity g,
                        DType input_dtype);

// Per-head, per-channel FP8 E4M3 V over all tokens.
struct Fp8V {
  int64_t H = 0, S = 0, D = 0;
  std::vector<uint8_t> codes;  // [H][S][D]
  std::vector<float> values;   // decoded codes, [H][S][D]
  std::vector<float> scales;   // [H][D]; 0 for an all-zero channel
  int64_t zero_channels = 0;
};
// amax = max|v|; v_scale = amax*rcp(scale_max); code = e4m3(v * (scale_max*rcp(amax))).
// An all-zero channel (where the real kernel divides by zero) gets scale 0 and
// codes 0, so its output channel is exactly 0.
Fp8V quantize_v_fp8(const HeadMajor& v, float scale_max);

}  // namespace ts::sage2
