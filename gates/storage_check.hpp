#pragma once
// A bit-exact claim (a rule `ulp_max` max 0, or `identical_fraction` min 1)
// means "the same bits in the same type": between outputs stored in
// different types it is not false but meaningless (float64 against bf16 has
// no common bits; rounded to bf16 the float64 output may well match, which
// says nothing of a kernel that should have written bf16). judge() refuses
// it before judging, with an InputError naming the rule and both types.
#include "gates/gate_file.hpp"
#include "gates/verdict.hpp"

namespace ts {

bool is_bit_exact_rule(const GateRule& r);

// Throws InputError when a bit-exact rule of `gate` would compare figures of
// `ev` whose two sides were stored in different types (the hidden storage
// figures of metric_map; evidence without them, e.g. a measurements file,
// carries no types and passes).
void check_bit_exact_storage(const GateFile& gate, const Evidence& ev);

}  // namespace ts
