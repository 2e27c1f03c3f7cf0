#pragma once
// The one place the extension calls the gate engine on a fixture: the cases of
// `touchstone gate --fixture` (drivers/gate_on_fixture.hpp), judged by the one
// loop (drivers/run_cases.hpp).
#include <cstdint>
#include <string>
#include <vector>

#include "gates/gate_file.hpp"
#include "gates/verdict.hpp"

namespace ts::python {

struct GateCall {
  std::string fixture, baseline;
  std::vector<std::string> candidates;
  int pairs = -1, warmup = -1, rotate = -1;  // -1: the gate's defaults (core/timing_defaults.hpp)
  uint64_t seed = 1;
  std::string exact = "auto";
  bool allow_nonfinite = false;
  std::string gate_arg;  // the gate as the caller named it, for repro lines
  bool accuracy_only = false;  // speed rules left out (drivers/run_cases.hpp CaseOptions)
};

GateRun run_gate(const GateFile& gate, const GateCall& call);

}  // namespace ts::python
