#pragma once
// The sage2 emulation's element-wise loops (reference/attention_sage2.cpp) in
// vector lanes, on the path best_isa() picks (reference/isa.hpp): one row's
// online-softmax step, the exact P·V chunk sums and their accumulation. Each gives the
// bits of sage2_arith.hpp's scalar functions, which the CUDA mirror keeps
// (tests/reference/test_sage2_lanes.cpp checks every path against them).
#include <cstdint>

#include "reference/isa.hpp"

namespace ts::sage2_lanes {

// sage2::softmax_step; p must not overlap s.
float softmax_step(const float* s, float* p, int64_t nk, float& m, float& den, bool round_p);
// acc[i] = sage2::f32_of_sum(acc[i], c[i]), i < n (the fp32 accumulators).
void add_f32(float* acc, const double* c, int64_t n);
// acc[i] = sage2::fp16_of_double(acc[i] + c[i]), i < n (the fp16 accumulator).
void add_fp16(double* acc, const double* c, int64_t n);

// c = p · v for p [nr][nk] (rows ld_p apart), v [nk][D] and c [nr][D]
// (rows D apart), where every sum is exact, so that any order gives its bits:
// P·V chunks of E4M3 P and V (attention_sage2.cpp says why they are).
void exact_pv(const double* p, int64_t ld_p, const double* v, int64_t nr, int64_t nk, int64_t D, double* c);

// The same on a given path (tests).
float softmax_step(const float* s, float* p, int64_t nk, float& m, float& den, bool round_p, Isa isa);
void add_f32(float* acc, const double* c, int64_t n, Isa isa);
void add_fp16(double* acc, const double* c, int64_t n, Isa isa);
void exact_pv(const double* p, int64_t ld_p, const double* v, int64_t nr, int64_t nk, int64_t D, double* c,
              Isa isa);

}  // namespace ts::sage2_lanes
