#pragma once
// The writers of `touchstone sweep` (drivers/sweep.hpp computes): its JSON, the terminal table,
// and with a gate the gate's Markdown and HTML reports of the rows, the block's stage chain
// appended.
#include <nlohmann/json.hpp>
#include <string>

#include "drivers/sweep.hpp"

namespace ts {

// SweepResult::json with a gate's "block": the chain's stage sets and stage_json, or why it was skipped.
nlohmann::json sweep_json(const SweepResult& r);
std::string sweep_text(const SweepResult& r);      // the terminal table
// With a gate: the gate's Markdown report, block chain appended. Without one: InputError (a
// Markdown or HTML report shows verdicts).
std::string sweep_markdown(const SweepResult& r);
std::string sweep_html(const SweepResult& r);      // with a gate: one page, the rows' run and the block chain's

}  // namespace ts
