#pragma once
// The writers of `touchstone chain` and `touchstone policy` (drivers/chain_policy.hpp judges).
#include <nlohmann/json.hpp>
#include <string>

#include "drivers/chain_policy.hpp"

namespace ts {

// Error after each block of each step, what each block added and carried, the frontier of a
// policy search, then the gate's own report; lines fit `width` columns.
std::string chain_text(const ChainJudgement& j, int width);
std::string chain_html(const ChainJudgement& j);
// Schema touchstone.chain/1: every cell of every chain, the baseline's cells, the verdicts.
nlohmann::json chain_json(const ChainJudgement& j);

}  // namespace ts
