#pragma once
// The routing side of a sol candidate's error (docs/triage.md): per head and
// query block, the exact softmax mass that falls on the video blocks the
// routing left out, the quantity τ trades against density.
#include <cstdint>
#include <vector>

#include "core/tensor.hpp"
#include "reference/attention_problem.hpp"

namespace ts {

// route_mask [H, QB, VB] (1 = routed), video_blocks [VB, 2] (start, length),
// as sol's dump=on gives them. Returns the mean over each query block's rows
// of the float64 softmax mass on unrouted video keys, row-major [H][QB].
std::vector<double> sol_missed_mass(const AttentionProblem& problem, const Tensor& route_mask,
                                    const Tensor& video_blocks, int64_t block_q);

}  // namespace ts
