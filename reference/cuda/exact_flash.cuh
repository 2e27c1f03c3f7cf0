#pragma once
// The fused float64 kernel of exact_cuda (exact_flash.cu), as attention_exact.cu
// launches it; exact_flash_unsupported (exact_kernel.hpp) says where it cannot run.
#include <cuda_runtime.h>

namespace ts::cuda {

// out = softmax(q kᵀ · scale) v per head, all [S, H, D] float64 on the device.
cudaError_t exact_flash_launch(const double* q, const double* k, const double* v, double* out, long long S,
                               long long H, int D, double scale);

}  // namespace ts::cuda
