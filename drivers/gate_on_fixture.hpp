#pragma once
// Runs a gate on a fixture: builds the baseline and candidates through the
// backend registry, computes exact once, measures each candidate against the
// baseline and exact, times it paired with the baseline, and judges it.
// Shared by `touchstone gate --fixture` and `touchstone demo`.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/timing_defaults.hpp"
#include "fixtures/attention_inputs.hpp"
#include "fixtures/fixture.hpp"
#include "kernels_under_test/registry.hpp"

#include "gates/gate_file.hpp"
#include "gates/verdict.hpp"
#include "drivers/run_estimate.hpp"

namespace ts {

struct GateRunOptions {
  int pairs = kGateTiming.pairs, warmup = kGateTiming.warmup;
  int rotate = kGateTiming.rotate;  // input copies timed runs cycle through
  double budget_s = 0;   // > 0: stop timing a candidate after this long (min 3 pairs)
  uint64_t seed = 1;     // bootstrap seed
  bool allow_nonfinite = false;
  std::string gate_arg;  // --gate as the user gave it, for repro lines (default: from gate.source)
  std::string exact = "auto";  // the exact reference as a spec (drivers/run_estimate.hpp choose_exact)
  bool allow_slow = false;     // start a CPU run estimated over the limit anyway
};

// Bad values (pairs < 1, warmup < 0, rotate < 1, budget < 0) -> InputError.
void validate(const GateRunOptions& o);

// Bad specs, fixture or gate -> InputError; a candidate that throws while
// running is REJECT with its error and the others are still judged.
GateRun run_gate_on_fixture(const GateFile& gate, const std::string& fixture_path,
                            const std::string& baseline_spec,
                            const std::vector<std::string>& candidates, const GateRunOptions& opts);

// Whether any rule of the gate is a speed rule (then candidates are timed).
bool has_speed_rule(const GateFile& gate);

// How a candidate's speed against the baseline is measured on a fixture, the
// one way every driver does it (the gate, the sweep): a stored side replays its
// /timings (never a timed file read), computed sides are timed in pairs
// A B A B ... (CUDA events when both report them, else the steady clock) on
// rotated input copies; anything less than kMinTimingSamples a side, or two
// clocks, is SpeedEvidence::missing with the reason.
class SpeedMeasurer {
 public:
  SpeedMeasurer(const Fixture& fx, const AttentionProblem& problem, const GateFile& gate,
                const GateRunOptions& opts);
  SpeedEvidence measure(AttentionBackend& candidate, AttentionBackend& baseline) const;
  struct Inputs;  // the rotated input copies (drivers/gate_on_fixture.cpp)

 private:
  std::shared_ptr<const Inputs> in_;
  double confidence_;
  GateRunOptions opts_;
};

// The baseline's output on the problem. A baseline that fails to run is bad
// input (the user named it), reported as "baseline 'SPEC' failed: why".
Tensor run_baseline(AttentionBackend& baseline, const AttentionProblem& problem, const std::string& spec);

// A word for a POSIX shell: as is when plain, else in single quotes.
std::string shell_quote(const std::string& s);

}  // namespace ts
