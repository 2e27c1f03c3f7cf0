#pragma once
// The vector instruction sets the host emulations' inner loops are built for
// (reference/lanes.hpp): SSE2 on every x86-64, AVX2 chosen at run time where
// the CPU has it. Every path computes the same bits; only the speed differs.
#include <vector>

namespace ts {

enum class Isa { sse2, avx2 };
const char* isa_name(Isa isa);

// The paths this CPU can run, slowest first.
std::vector<Isa> isas_available();
// The last of them: what the emulations use.
Isa best_isa();

}  // namespace ts
