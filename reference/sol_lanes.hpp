#pragma once
// The sol emulation's softmax exponentials (reference/attention_sol.cpp) in
// vector lanes, on the path best_isa() picks (reference/isa.hpp), with the
// bits of sol::expf_det, which the CUDA mirror keeps
// (tests/reference/test_sol.cpp checks every path against it).
#include <cstdint>

#include "reference/isa.hpp"

namespace ts::sol_lanes {

// x[j] = sol::expf_det(x[j] - m) for j < n, in place; returns
// sum + x[0] + x[1] + ..., float32, in index order.
float exp_and_sum(float* x, int64_t n, float m, float sum);
float exp_and_sum(float* x, int64_t n, float m, float sum, Isa isa);  // tests

}  // namespace ts::sol_lanes
