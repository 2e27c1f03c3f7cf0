#pragma once
// The exact attention reference on a CUDA device, mirroring
// reference/attention_exact.hpp name for name (as CUTLASS's host and device
// references do): float64 inputs, running-max softmax, float64 accumulation,
// over the whole packed sequence. Agrees with the host reference to ~1e-15
// relative L2 (not bit for bit: the device's exp, GEMM order and two-pass
// softmax differ from the host's streamed one).
#include <memory>
#include <string>

#include "reference/attention_problem.hpp"
#include "reference/backend_params.hpp"
#include "reference/cuda/exact_kernel.hpp"

namespace ts::cuda {

// out: [S, H, D] float64; stats: device_ms (CUDA events around the compute,
// transfers excluded), the kernel that ran and gemm's chunk. `chunk` = gemm's
// queries per step (0: sized from free device memory; > 0 makes automatic pick
// gemm). InternalError for CUDA/cuBLAS failures (each call is checked),
// InputError when no device or kernel=flash cannot run on it.
AttentionResult attention_exact(const AttentionProblem& problem, ExactKernel kernel = ExactKernel::automatic,
                                long long chunk = 0);

// kind "exact_cuda": `kernel` (auto, flash, gemm; default auto) and `chunk`
// (gemm's queries per step, default 0 = automatic).
std::unique_ptr<AttentionBackend> make_exact_backend(BackendParams& params);

}  // namespace ts::cuda
