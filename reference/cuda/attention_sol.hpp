#pragma once
// The sol routed attention on a CUDA device, mirroring reference/attention_sol.hpp name for
// name. q, k, v go to the device as stored; the block means, the routing scores r and the
// quantisers run there with the host's steps and orders (sol_prepare.cu), bit for bit (tests/cuda
// compares every prepared array with sol_prepare_inputs'), and the host routes from r, so the
// routing decisions are the host's. The attention follows the host's arithmetic step for step
// (reference/sol_arith.hpp; -fmad=false) and sums in the host's order (every float32 product
// sum in index order, reference/attention_sol.cpp): the host's output bits at every precision
// (tests/cuda).
#include <memory>
#include <vector>

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

// The device's prepared arrays brought back (tests hold them to sol_prepare_inputs'): `pr` as
// sol_cuda_prepare leaves it (layout and r), the arrays where the precision keeps them, the
// INT8 scales per token ([H][S]) and the pseudo-keys (sol_pseudo_key's values).
struct SolCudaPrepared {
  SolPrepared pr;
  std::vector<float> q, k, v, q_scale, k_scale, v8_scale, pseudo_k, vbar;
  std::vector<int8_t> q8, k8, v8;
};
SolCudaPrepared sol_cuda_prepared(const AttentionProblem& problem, const SolConfig& cfg);

// kind "sol_cuda": the knobs of kind "sol"; output name sol_cuda_<...>.
std::unique_ptr<AttentionBackend> make_sol_backend(BackendParams& params);

}  // namespace ts::cuda
