#pragma once
// Maps a benchmark report of the seed's layout (a copy is
// tests/gates/data/gb10_sage2_vs_sol_block24.json) to touchstone.measurements/1. Generic over
// the numbers and backend names: gates/README.md lists the rules.
#include <string>
#include <vector>

#include "gates/measurements.hpp"

namespace ts {

struct ImportOptions {
  // Qualifiers a report appends to a backend's name at some levels only;
  // stripped so that one backend gets one name across levels.
  std::vector<std::string> strip_suffixes = {"_exact_conditioning_kv"};
};

MeasurementsFile import_report(const std::string& text, const std::string& where,
                               const ImportOptions& opts = {});
MeasurementsFile import_report_file(const std::string& path, const ImportOptions& opts = {});

}  // namespace ts
