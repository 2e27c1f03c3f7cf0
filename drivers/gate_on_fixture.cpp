#include "drivers/gate_on_fixture.hpp"

#include "core/error.hpp"

namespace ts {

std::string gate_argument(const GateFile& gate) {
  return gate.source.rfind("builtin:", 0) == 0 ? gate.source.substr(8) : gate.source;
}

std::vector<Case> gate_cases(const GateFile& gate, const std::string& fixture_path, const std::string& baseline_spec,
                             const std::vector<std::string>& candidates, const GateRunOptions& o) {
  if (candidates.empty()) throw InputError("--fixture needs at least one --candidate");
  CaseRequest r;
  r.input = fixture_path;
  r.baseline = baseline_spec;
  r.candidates = candidates;
  r.gate_arg = o.gate_arg.empty() ? gate_argument(gate) : o.gate_arg;
  r.options = o;
  return make_cases(r);
}

GateRun run_gate_on_fixture(const GateFile& gate, const std::string& fixture_path,
                            const std::string& baseline_spec,
                            const std::vector<std::string>& candidates, const GateRunOptions& o) {
  return run_cases(gate, gate_cases(gate, fixture_path, baseline_spec, candidates, o)).run;
}

}  // namespace ts
