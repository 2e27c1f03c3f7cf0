#pragma once
// The transformer block on a CUDA device, mirroring reference/block.hpp and
// reference/block_linear.hpp name for name (as sage2_cuda mirrors sage2).
// Every stage but attention runs on the device with the host's definitions
// (reference/block_arith.hpp, numerics/nvfp4_block.hpp) in the host's order:
//   nvfp4 (te, te_rcp6, modelopt) and bf16: the host's bits, stage by stage;
//   fp64: the linears are cuBLAS DGEMMs (another summation order), within
//         rounding of the host (tests/cuda: rel_l2 <= 1e-12 per stage).
// The attention stage is the AttentionBackend the caller passes, run on host
// copies of q_rope, k_rope and v as the host block runs it (exact_cuda and
// sage2_cuda compute on the device; with sage2_cuda the block gives the host
// block's bits with sage2).
#include <cstdint>
#include <vector>

#include "reference/block.hpp"
#include "reference/block_linear.hpp"

namespace ts::cuda {

// As ts::run_block. stage_ms: each stage's wall time, the device synchronised
// (stage outputs on the device; the copies of kept stages to the host are in
// BlockResult::transfer_ms). InputError as the host; InputError also when no
// device is usable.
BlockResult run_block(const BlockInputs& in, AttentionBackend& attention, const BlockOptions& opts);

namespace blk {
// As ts::blk::linear_stage, on the device (host arrays in and out).
Tensor linear_stage(const double* x, int64_t rows, int64_t K, const Tensor& w, const Tensor* b,
                    const ts::blk::LinearSpec& spec, std::vector<int64_t> out_shape);
}  // namespace blk

}  // namespace ts::cuda
