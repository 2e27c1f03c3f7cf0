#pragma once
// The float64 exact reference's inner loops: one (head, query block) task,
// streamed over key blocks. Every sum has an order fixed in the source, never
// left to a BLAS or to the vector width:
//   - a score is 0 + q0·k0 + q1·k1 + ... in d order;
//   - an output element is ((acc·corr) + p0·v0) + p1·v1 + ... in key order;
//   - a row sum over a key block is eight partial sums (key j goes to partial
//     j mod 8, in key order) added as ((s0+s1)+(s2+s3))+((s4+s5)+(s6+s7)).
// Vectors only ever run across independent outputs (keys of a score row,
// channels of an output row), with separate multiplies and adds (no FMA), so
// the SSE2 path (every x86-64) and the AVX2 path (chosen at run time where the
// CPU has it) compute the same bits: only the speed changes across CPU
// generations.
#include <cstdint>
#include <string>
#include <vector>

#include "reference/isa.hpp"

namespace ts::exact_tiles {

struct Task {
  const double* q = nullptr;  // row i of the query block at q + i * ld_q
  const double* k = nullptr;  // key j of the head at k + j * ld_k
  const double* v = nullptr;  // value j at v + j * ld_v
  int64_t ld_q = 0, ld_k = 0, ld_v = 0;
  int64_t nq = 0, S = 0, D = 0, block_k = 0;
  double scale = 0;
  double* out = nullptr;  // row i at out + i * ld_out
  int64_t ld_out = 0;
};

// The paths (reference/isa.hpp); attend uses best_isa().
using ts::Isa;
using ts::isa_name;
using ts::isas_available;

void attend(const Task& t);
void attend(const Task& t, Isa isa);  // tests: every path gives the same bits

}  // namespace ts::exact_tiles
