#pragma once
// The sage2 emulation with its O(S²) part on a CUDA device, mirroring
// reference/attention_sage2.hpp name for name. The quantisers run on the host
// (sage2_prepare); the device computes the same bits as the host emulation
// (tested bit for bit), fast enough for block24-sized fixtures.
#include <memory>

#include "reference/attention_problem.hpp"
#include "reference/attention_sage2.hpp"
#include "reference/backend_params.hpp"

namespace ts::cuda {

// As ts::sage2_attention; the quantised pipeline only (quant_qk, quant_v and
// round_p on; no dump): InputError otherwise, and when no device is usable.
// stats: v_zero_channels, device_ms (CUDA events around the kernel).
AttentionResult sage2_attention(const AttentionProblem& problem, const Sage2Config& cfg);

// kind "sage2_cuda": the knobs of kind "sage2"; output name sage2_cuda_<preset>...
std::unique_ptr<AttentionBackend> make_sage2_backend(BackendParams& params);

}  // namespace ts::cuda
