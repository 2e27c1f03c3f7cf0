#pragma once
// The exact attention reference on a CUDA device, mirroring
// reference/attention_exact.hpp name for name (as CUTLASS's host and device
// references do): float64 inputs, running-max softmax, float64 accumulation,
// over the whole packed sequence. Agrees with the host reference to ~1e-15
// relative L2 (not bit for bit: the device's exp and reduction order differ).
#include <memory>
#include <string>

#include "reference/attention_problem.hpp"
#include "reference/backend_params.hpp"
#include "reference/cuda/exact_kernel.hpp"

namespace ts::cuda {

// out: [S, H, D] float64. Throws InputError for head_dim > 256, InternalError
// for CUDA failures (each CUDA call is checked), InputError when no device.
AttentionResult attention_exact(const AttentionProblem& problem);

// kind "exact_cuda": no parameters.
std::unique_ptr<AttentionBackend> make_exact_backend(BackendParams& params);

}  // namespace ts::cuda
