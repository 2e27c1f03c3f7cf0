#pragma once
// The boundary between nvcc-compiled code and the sage2 mirror's host side:
// plain types only (see exact_kernel.hpp).
#include <cstdint>
#include <string>

#include "reference/cuda/stored_input.hpp"

namespace ts::cuda {

// The sage2 problem's dimensions and kernel knobs. accum: 0 fp32, 1 fp32+fp32, 2 fp32+fp16.
struct Sage2DeviceProblem {
  long long S = 0, H = 0, D = 0;
  int blkq = 128, key_block = 64, accum = 2;
  float sm_scale = 0;
};

// The quantisers' knobs (reference/attention_sage2.cpp sage2_prepare's steps, run on the device):
// the INT8 granularity and group geometry, K smoothing with f32(1/S) and the element type km and
// (per_thread) K − km are rounded to (0 bf16, 1 fp16, 2 none: the input dtype), the FP8 scale maximum.
struct Sage2Quantisers {
  int per_thread = 0;
  long long blkq = 128, warpq = 32, blkk = 64, warpk = 64;
  int smooth_k = 1;
  float inv_s = 0;
  int km_round = 2;
  float scale_max = 448.0f;
};

// Which device kernel computes it; both give the host's bits.
//   tc: Q·Kᵀ on the INT8 tensor cores (exact int32), P·V on the float64 tensor
//       cores (each 32-key partial sum is exact in float64), softmax spread over
//       threads with the host's per-row order where it rounds (sage2_tc.cu);
//       compute capability 9.0+, head dim 32, 64 or 128.
//   simt: dp4a dot products and one thread per softmax row (attention_sage2.cu);
//       any device, tiles of blkq queries.
//   automatic: tc where sage2_tc_unsupported says nothing, else simt.
enum class Sage2Kernel { automatic, tc, simt };
const char* sage2_kernel_name(Sage2Kernel k);

// Why the tc kernel cannot run on the current device for this head dim and key
// block (empty: it can).
std::string sage2_tc_unsupported(long long H, int D, int key_block);

// Where the host clock goes inside sage2_attention_device (steady clock, ms),
// and which kernel ran.
struct Sage2Timing {
  double device_ms = 0;  // CUDA events around the compute (V widening included for tc)
  double upload_ms = 0, prepare_ms = 0, download_ms = 0;  // prepare: the quantisers on the device
  long long v_zero_channels = 0;  // V channels that are all zero (scale 0, output channel 0)
  Sage2Kernel kernel = Sage2Kernel::simt;
};

// out[S*H*D] (float32, before the bf16 rounding) = the sage2 attention of q, k, v (as stored),
// quantised on the device as sage2_prepare does on the host, bit for bit (sage2_quant.cuh), then
// computed by `kernel` (tc or simt; automatic resolves here); out = place(ctx), called on this
// thread while the kernel computes (the host makes its output's pages meanwhile). Returns an
// empty string or the failing CUDA call.
std::string sage2_attention_device(const Sage2DeviceProblem& p, const Sage2Quantisers& quant, const StoredInput& q,
                                   const StoredInput& k, const StoredInput& v, Sage2Kernel kernel,
                                   float* (*place)(void*), void* ctx, Sage2Timing* t);

// Bytes of shared memory a simt block needs (scores of one key block + row state).
long long sage2_shared_bytes(int blkq, int key_block);

}  // namespace ts::cuda
