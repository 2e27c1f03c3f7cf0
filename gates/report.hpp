#pragma once
// Renderings of a gate run (gates.md "Reports"): a terminal table, JSON
// (everything), JUnit XML (one test case per candidate x rule) and a
// Markdown summary for CI job pages.
#include <string>

#include "gates/verdict.hpp"

namespace ts {

std::string render_terminal(const GateRun& run);
std::string render_json(const GateRun& run);
std::string render_junit(const GateRun& run);
std::string render_markdown(const GateRun& run);

// Writes to a temporary file beside `path` and renames it over `path`, so a
// failed write never leaves a truncated report. InputError naming the path.
void write_file_atomic(const std::string& path, const std::string& content);

}  // namespace ts
