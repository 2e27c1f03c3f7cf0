#pragma once
// The sage2 emulation on a CUDA device, mirroring reference/attention_sage2.hpp name for name.
// q, k, v go to the device as stored; the quantisers run there with sage2_prepare's steps
// (cuda/sage2_quant.cuh) and the attention after them: the same bits as the host emulation
// (tested bit for bit), fast enough for block24-sized fixtures.
#include <memory>

#include "reference/attention_problem.hpp"
#include "reference/attention_sage2.hpp"
#include "reference/backend_params.hpp"
#include "reference/cuda/sage2_kernel.hpp"

namespace ts::cuda {

// As ts::sage2_attention; the quantised pipeline only (quant_qk, quant_v and
// round_p on; no dump): InputError otherwise, when no device is usable, and for
// kernel=tc where it cannot run (sage2_tc_unsupported). Both kernels give the
// host's bits (sage2_kernel.hpp). stats: v_zero_channels, device_ms (CUDA events
// around the compute), kernel (the one that ran), and the host clock's
// prepare_ms, upload_ms, download_ms, finish_ms.
AttentionResult sage2_attention(const AttentionProblem& problem, const Sage2Config& cfg,
                                Sage2Kernel kernel = Sage2Kernel::automatic);

// kind "sage2_cuda": the knobs of kind "sage2" and kernel=auto|tc|simt; output
// name sage2_cuda_<preset>..., with _kernel-<k> when a kernel is chosen.
std::unique_ptr<AttentionBackend> make_sage2_backend(BackendParams& params);

}  // namespace ts::cuda
