#pragma once
// touchstone compare F --stages A B [--gate G]: the block's stages side by
// side, and the first stage (in block order) whose error exceeds its bound.
//
// A and B name stage sets of the fixture:
//   observed   /block/stages/<stage> (the captured run)
//   NAME       /outputs/NAME/stages/<stage> (a touchstone reference run)
//   recompute  (as B only) the elementwise stages modulate1, residual1,
//              modulate2, swiglu and output recomputed from A's own inputs
//              (A's norm1, out_proj, norm2, fc1, residual1, fc2 and the
//              fixture's x and modulation) with the block's definition in
//              A's storage type; judged bit for bit (ulp_max 0, no NaN) unless
//              a gate says otherwise. This is how a fused modulation, gate or
//              SwiGLU kernel is judged.
// A is the candidate, B the reference: metrics are gates/metrics.hpp's
// compute_metrics(A, B). Bounds come from a touchstone.gate/1 file whose rules
// name a stage in "tensor" (or "stages": every stage), given as a path, a
// gates/ built-in, or one of two built into this command: stages-default
// (the default: no NaN/Inf, and each stage's rel_l2 <= floor + growth x the
// largest rel_l2 of the stages it reads, stage_growth_bounds(); so a stage is
// blamed only for error its inputs do not explain) and stages-bit-exact
// (ulp_max 0 at every stage: a deterministic replay of the run's own settings). speedup and
// max_ratio_to_baseline rules do not apply to a stage comparison and are
// listed as not applicable.
// Returns 0 when every compared stage is within its bounds, 1 otherwise.
#include <nlohmann/json.hpp>
#include <string>

namespace ts {

int compare_stages(const std::string& fixture, const std::string& a, const std::string& b,
                   const std::string& gate_path_or_empty, bool json);

// The default gate (a touchstone.gate/1 JSON text) and its growth bounds
// ([{stage, floor, growth, inputs}]).
const std::string& default_stage_gate_text();
nlohmann::json stage_growth_bounds();

}  // namespace ts
