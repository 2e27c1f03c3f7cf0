#include "drivers/gate_on_fixture.hpp"

#include "core/error.hpp"

namespace ts {

std::string gate_argument(const GateFile& gate) {
  return gate.source.rfind("builtin:", 0) == 0 ? gate.source.substr(8) : gate.source;
}

std::vector<Case> gate_cases(const GateFile& gate, const std::string& fixture_path, const std::string& baseline_spec,
                             const std::vector<std::string>& candidates, const std::string& gate_arg) {
  if (candidates.empty()) throw InputError("--fixture needs at least one --candidate");
  std::vector<Case> cases;
  for (const auto& spec : candidates) {
    Case c;
    c.source = Case::source_of(spec);
    c.input = fixture_path;
    c.baseline = baseline_spec;
    c.candidate = spec;
    c.gate_arg = gate_arg.empty() ? gate_argument(gate) : gate_arg;
    cases.push_back(c);
  }
  return cases;
}

GateRun run_gate_on_fixture(const GateFile& gate, const std::string& fixture_path,
                            const std::string& baseline_spec,
                            const std::vector<std::string>& candidates, const GateRunOptions& o) {
  return run_cases(gate, gate_cases(gate, fixture_path, baseline_spec, candidates, o.gate_arg), o).run;
}

}  // namespace ts
