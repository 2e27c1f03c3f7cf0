#pragma once
// The boundary between nvcc-compiled code and the sage2 mirror's host side:
// plain types only (see exact_kernel.hpp).
#include <cstdint>
#include <string>

namespace ts::cuda {

// The quantised sage2 problem as the host prepared it (reference/attention_sage2.hpp),
// all host arrays. accum: 0 fp32, 1 fp32+fp32, 2 fp32+fp16.
struct Sage2DeviceProblem {
  long long S = 0, H = 0, D = 0;
  int blkq = 128, key_block = 64, accum = 2;
  float sm_scale = 0;
  const int8_t* q8 = nullptr;         // [H][S][D] codes
  const int8_t* k8 = nullptr;         // [H][S][D] codes of K - km
  const float* q_scale_tok = nullptr;  // [H][S]: each token's Q scale
  const float* k_scale_tok = nullptr;  // [H][S]
  const float* v = nullptr;           // [H][S][D] decoded E4M3 values
  const float* v_scale = nullptr;     // [H][D]
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
  double upload_ms = 0, download_ms = 0;
  Sage2Kernel kernel = Sage2Kernel::simt;
};

// out[S*H*D] (float32, before the bf16 rounding) = the sage2 attention of p,
// computed by `kernel` (tc or simt; automatic resolves here). Returns an empty
// string or the failing CUDA call.
std::string sage2_attention_device(const Sage2DeviceProblem& p, Sage2Kernel kernel, float* out, Sage2Timing* t);

// Bytes of shared memory a simt block needs (scores of one key block + row state).
long long sage2_shared_bytes(int blkq, int key_block);

}  // namespace ts::cuda
