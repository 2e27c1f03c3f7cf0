#pragma once
// The elementwise and per-token stages of the block, in the two arithmetic
// definitions run_block uses (docs/block.md "Where rounding happens"):
//   Arith::f64  : float64, no rounding (fp64 linear mode).
//   Arith::bf16 : inputs converted to float32, float32 arithmetic in the order
//                 written below, one round-to-nearest-even to bf16 at the end
//                 (bf16 and nvfp4 linear modes).
// They are public so that a captured run's elementwise stages can be
// recomputed from its own observed inputs and checked bit for bit
// (drivers/stage_comparison: "recompute").
#include <cstdint>

#include "core/tensor.hpp"
#include "reference/block.hpp"
#include "reference/block_arith.hpp"
#include "reference/numerics/convert.hpp"

namespace ts::blk {

enum class Arith { f64, bf16 };

// float64 -> bf16 with one rounding (round-to-odd to float32 first, so there
// is no double rounding through float32).
float bf16_round_f64(double x);

// The per-element definitions (modulate_bf16, swiglu_f64, ...) are in
// block_arith.hpp.

// RMSNorm of one row. Arith::bf16: float32 sum of squares in index order,
// inv = 1 / sqrt(ss / n + eps) in float32, out = bf16((x * inv) * w).
void rms_norm_row(const double* x, int64_t n, const double* w, double eps, Arith a, double* out);

// Whole-stage versions over [S, ...] tensors, parallel over tokens.
Tensor rms_norm_stage(const Tensor& x, const Tensor& w, double eps, Arith a);
// h * (1 + mod[scale]) + mod[shift], with each token's modulation row.
Tensor modulate_stage(const Tensor& h, const BlockInputs& in, int shift, int scale, Arith a);
// base + mod[gate] * y.
Tensor gated_residual_stage(const Tensor& base, const Tensor& y, const BlockInputs& in, int gate,
                            Arith a);
// fc1 [S, 2F] = [value; gate] -> [S, F].
Tensor swiglu_stage(const Tensor& fc1, Arith a);
// q or k of qkv [S, 3, H, D] (which = 0 or 1): per-head RMSNorm with `norm_w`
// [D] then RoPE. Arith::bf16: the norm's output is rounded to bf16, the
// rotation runs in float32 with cos/sin computed in float64 (detmath) and
// rounded to float32, and the result is rounded to bf16.
Tensor qk_rope_stage(const Tensor& qkv, int which, const Tensor& norm_w, const BlockInputs& in,
                     Arith a);
// The attention stage on host arrays, for the host and the device block
// alike: q and k from their rope stages, v read in place from qkv
// [S, 3, H, D]; under Arith::bf16 the backend's output is rounded to bf16.
// The backend's stats go to `stats`.
Tensor attention_stage(const Tensor& qkv, const Tensor& q_rope, const Tensor& k_rope,
                       const BlockConfig& c, AttentionBackend& attention, Arith a,
                       nlohmann::json& stats);

}  // namespace ts::blk
