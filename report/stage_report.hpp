#pragma once
// The writers of the stage comparison (drivers/stage_comparison.hpp computes it).
#include <nlohmann/json.hpp>
#include <string>

#include "drivers/stage_comparison.hpp"

namespace ts {

// One row per stage, its figures, status and the rules it did not pass.
std::string render_stage_table(const StageComparison& c);
// Schema touchstone.stage-comparison/1 (`compare --stages --json`, and the block chain of
// `sweep --json`).
nlohmann::json stage_json(const StageComparison& c);

}  // namespace ts
