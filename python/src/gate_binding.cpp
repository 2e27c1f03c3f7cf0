#include "gate_binding.hpp"

#include "core/timing_defaults.hpp"
#include "drivers/gate_on_fixture.hpp"

namespace ts::python {

GateRun run_gate(const GateFile& gate, const GateCall& call) {
  GateRunOptions o;
  if (call.pairs >= 0) o.pairs = call.pairs;
  if (call.warmup >= 0) o.warmup = call.warmup;
  if (call.rotate >= 0) o.rotate = call.rotate;
  o.seed = call.seed;
  o.exact = call.exact;
  o.allow_nonfinite = call.allow_nonfinite;
  o.gate_arg = call.gate_arg;
  o.accuracy_only = call.accuracy_only;
  return run_gate_on_fixture(gate, call.fixture, call.baseline, call.candidates, o);
}

}  // namespace ts::python
