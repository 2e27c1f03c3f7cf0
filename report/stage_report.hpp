#pragma once
// The stage comparison's terminal table (drivers/stage_comparison.hpp computes it; its JSON is
// StageComparison::to_json): one row per stage, its figures, status and the rules it did not pass.
#include <string>

#include "drivers/stage_comparison.hpp"

namespace ts {

std::string render_stage_table(const StageComparison& c);

}  // namespace ts
