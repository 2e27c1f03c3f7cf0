#pragma once
// The quantisers of reference/sage2_quant.hpp on the device, name for name, for the sage2 and sol
// mirrors' .cu files: the same steps on device arrays, with the same scalar recipes
// (reference/sage2_recipe.hpp) and the same summation orders, so the same bits. Each runs on the
// default stream and returns its launch's error; arrays are [H][S][D] float32 unless said.
#include <cuda_runtime.h>

#include <cstdint>

#include "reference/cuda/stored_input.hpp"

namespace ts::cuda::sage2 {

// How an input's elements are stored where the host hands them over.
enum class Stored : int { bf16 = 0, f16 = 1, f32 = 2 };  // StoredInput's types (stored_input.hpp)
// The element type a result is rounded to (round_to_dtype): bf16, fp16, or none.
enum class Round : int { bf16 = 0, f16 = 1, none = 2 };

// reference/sage2_quant.hpp ScaleLayout.
struct ScaleLayout {
  bool per_thread = false, query = true;
  long long blk = 128, warp = 32;
};

// out = the [S][H][D] elements of `in` (device, stored as `type`) head-major, exactly.
cudaError_t to_head_major(const void* in, Stored type, long long S, long long H, long long D, float* out);

// q, k and v as the host hands them over, uploaded side by side into one scratch buffer and
// then to_head_major into qf, kf, vf: the first step of both the sage2 and the sol mirror.
// *upload_ms: the copies' wall time; on failure *what names the step that failed.
cudaError_t inputs_head_major(const StoredInput& q, const StoredInput& k, const StoredInput& v, long long S,
                              long long H, long long D, float* qf, float* kf, float* vf, double* upload_ms,
                              const char** what);

// km[h][d] = round(sum over s in token order of k[h][s][d], times inv_n): inv_n is f32(1/S) as
// the host computed it.
cudaError_t smoothing_mean(const float* k, long long S, long long H, long long D, float inv_n, Round round,
                           float* km);

// y = x - km[h][d] (per_thread: rounded to `round`, as torch's k - km in the input dtype); y may be x.
cudaError_t subtract_mean(const float* x, const float* km, long long S, long long H, long long D, bool per_thread,
                          Round round, float* y);

// codes [H][S][D] of x by `layout`, and each token's scale [H][S] (the value the host's padded
// scale array holds at the token's index).
cudaError_t quantize_int8(const float* x, long long S, long long H, long long D, const ScaleLayout& layout,
                          int8_t* codes, float* scale_tok);

// Per-head, per-channel E4M3 V: values [H][S][D] (the decoded codes), scales [H][D] (0 for an
// all-zero channel, whose values are 0), *zero_channels counted.
cudaError_t quantize_v_fp8(const float* v, long long S, long long H, long long D, float scale_max, float* values,
                           float* scales, long long* zero_channels);

}  // namespace ts::cuda::sage2
