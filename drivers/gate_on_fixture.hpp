#pragma once
// `touchstone gate --fixture`: one case per candidate against the baseline,
// judged by the one loop (drivers/run_cases.hpp).
#include <string>
#include <vector>

#include "drivers/run_cases.hpp"
#include "gates/gate_file.hpp"
#include "gates/verdict.hpp"

namespace ts {

struct GateRunOptions : CaseOptions {
  std::string gate_arg;  // --gate as the user gave it, for repro lines (default: from gate.source)
};

// The gate as a user names it on the command line: a built-in's name, else its path.
std::string gate_argument(const GateFile& gate);

// The cases of a gate run: each candidate against the baseline on the fixture,
// with the run's options (make_cases).
std::vector<Case> gate_cases(const GateFile& gate, const std::string& fixture_path, const std::string& baseline_spec,
                             const std::vector<std::string>& candidates, const GateRunOptions& opts);

// Bad specs, fixture or gate -> InputError; a candidate that throws while
// running is REJECT with its error and the others are still judged.
GateRun run_gate_on_fixture(const GateFile& gate, const std::string& fixture_path,
                            const std::string& baseline_spec,
                            const std::vector<std::string>& candidates, const GateRunOptions& opts);

}  // namespace ts
