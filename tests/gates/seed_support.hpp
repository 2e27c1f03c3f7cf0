#pragma once
// The seed report (tests/gates/data is a copy of ../shared/seed, so tests do
// not depend on the shared folder) and helpers to judge modified copies.
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "gates/judge_for_tests.hpp"
#include "gates/gate_file.hpp"
#include "gates/import_report.hpp"
#include "gates/measurements.hpp"
#include "gates/verdict.hpp"

namespace ts::test {

// How often `sub` occurs in a rendered report.
inline int occurrences(const std::string& s, const std::string& sub) {
  int n = 0;
  for (size_t p = s.find(sub); p != std::string::npos; p = s.find(sub, p + 1)) ++n;
  return n;
}

inline std::string seed_path() {
  return std::string(TOUCHSTONE_SOURCE_DIR) + "/tests/gates/data/gb10_sage2_vs_sol_block24.json";
}

inline nlohmann::json seed_json() {
  std::ifstream in(seed_path());
  std::stringstream ss;
  ss << in.rdbuf();
  return nlohmann::json::parse(ss.str());
}

// Imports `report` and judges every candidate with `gate_name`.
inline GateRun judge_report(const nlohmann::json& report, const std::string& gate_name = "sparse_acceptance") {
  GateRun run;
  run.gate = load_gate(gate_name);
  const MeasurementsFile m = import_report(report.dump(), "report.json");
  run.mode = "measurements";
  run.input = "report.json";
  run.baseline = resolve_measured_baseline(m, run.gate.baseline);
  for (const auto& b : m.backends()) {
    if (b == run.baseline) continue;
    run.candidates.push_back(
        judge_for_test(run.gate, evidence_from_measurements(m, run.gate, run.baseline, b, 1), "repro " + b));
  }
  return run;
}

inline const CandidateVerdict* find(const GateRun& run, const std::string& name) {
  for (const auto& c : run.candidates)
    if (c.candidate == name) return &c;
  return nullptr;
}

}  // namespace ts::test
