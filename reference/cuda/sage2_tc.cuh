#pragma once
// The tensor-core kernel of sage2_cuda (sage2_tc.cu), as attention_sage2.cu
// launches it; sage2_tc_unsupported (sage2_kernel.hpp) says where it cannot run.
#include <cuda_runtime.h>

#include <cstdint>

namespace ts::cuda {

// Device arrays: q8, k8 [H][S][D] codes; qs, ks [H][S] per-token scales;
// v [H][S][D] the decoded E4M3 values widened to float64; vs [H][D] or null;
// out [S][H][D] float32 before the bf16 rounding.
struct Sage2TcArgs {
  long long S = 0;
  int H = 0, D = 0, key_block = 64, accum = 2;
  float sm_scale = 0;
  const int8_t *q8 = nullptr, *k8 = nullptr;
  const float *qs = nullptr, *ks = nullptr;
  const double* v = nullptr;
  const float* vs = nullptr;
  float* out = nullptr;
};

// Bytes of shared memory one block takes (0: no kernel for this D / key block).
size_t sage2_tc_smem(int D, int key_block);

cudaError_t sage2_tc_launch(const Sage2TcArgs& a);

}  // namespace ts::cuda
