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

// out[S*H*D] (float32, before the bf16 rounding) = the sage2 attention of p.
// Returns an empty string or the failing CUDA call; device_ms: CUDA events
// around the kernel.
std::string sage2_attention_device(const Sage2DeviceProblem& p, float* out, double* device_ms);

// Bytes of shared memory a block needs (scores of one key block + row state).
long long sage2_shared_bytes(int blkq, int key_block);

}  // namespace ts::cuda
