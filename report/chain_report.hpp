#pragma once
// The writers of `touchstone chain` and `touchstone policy` (drivers/chain_policy.hpp judges;
// its JSON is ChainJudgement::to_json).
#include <string>

#include "drivers/chain_policy.hpp"

namespace ts {

// Error after each block of each step, what each block added and carried, the frontier of a
// policy search, then the gate's own report; lines fit `width` columns.
std::string chain_text(const ChainJudgement& j, int width);
std::string chain_html(const ChainJudgement& j);

}  // namespace ts
