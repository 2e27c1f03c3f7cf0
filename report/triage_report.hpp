#pragma once
// The writers of `touchstone triage` (drivers/triage.hpp computes the report, schema
// touchstone.triage/1, as JSON): the terminal text (fits 100 columns) and a self-contained
// HTML page.
#include <nlohmann/json.hpp>
#include <string>

namespace ts {

std::string render_triage_text(const nlohmann::json& report);
std::string render_triage_html(const nlohmann::json& report);

}  // namespace ts
