#pragma once
// The sol routed attention with its O(S·n) part on a CUDA device, mirroring
// reference/attention_sol.hpp name for name. Routing, block means and the
// quantisers run on the host (sol_prepare), so the routing decisions are the
// host's, bit for bit. The device follows the host's arithmetic step for step
// (reference/sol_arith.hpp; -fmad=false):
//   - int8_qk_pv: every product sum is over integer codes (exact in float32),
//     every other sum in the host's order: the host's output bits;
//   - bf16 and int8_qk: the host multiplies the float32 logits (bf16) and P·V
//     with Eigen's GEMM, whose summation order depends on Eigen's kernels;
//     the device sums in index order. The outputs differ only by that order:
//     tests/cuda bounds them (one bf16 step apart, or near zero where sums
//     cancel; docs/spec-deviations.md).
#include <memory>

#include "reference/attention_problem.hpp"
#include "reference/attention_sol.hpp"
#include "reference/backend_params.hpp"

namespace ts::cuda {

// As ts::sol_attention (stats and dumps the same); InputError when no device
// is usable or the tiles exceed the device's shared memory. stats: device_ms.
AttentionResult sol_attention(const AttentionProblem& problem, const SolConfig& cfg);

// sol_attention in its parts, for runs that share their inputs (a sweep over
// tau): the checks; the routing-independent preparation and upload (held by
// the returned object); then, per routing configuration, route and run.
// sol_cuda_run needs a configuration with sol_same_inputs as the prepared one.
struct SolCudaInputs;
void sol_cuda_check(const AttentionProblem& problem, const SolConfig& cfg);
std::shared_ptr<SolCudaInputs> sol_cuda_prepare(const AttentionProblem& problem, const SolConfig& cfg);
AttentionResult sol_cuda_run(SolCudaInputs& inputs, const SolConfig& cfg);

// kind "sol_cuda": the knobs of kind "sol"; output name sol_cuda_<...>.
std::unique_ptr<AttentionBackend> make_sol_backend(BackendParams& params);

}  // namespace ts::cuda
