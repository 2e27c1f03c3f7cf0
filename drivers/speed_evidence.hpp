#pragma once
// How a candidate's speed against the baseline is measured on a fixture, the
// one way every case is (gates/README.md "Timing runs"):
// - computed sides are timed here, in pairs A B A B ... (CUDA events when both
//   report them, else the steady clock) on rotated input copies: one timing run;
// - stored sides replay their /timings (never a timed file read): samples that
//   share one timing run with the other side's (an interleaved replay) pair by
//   round; samples of different timing runs are compared only through the
//   medians of at least kMinTimingRuns runs a side, so that run-to-run variance
//   is in the interval; anything less is SpeedEvidence::missing with the reason.
#include <memory>
#include <string>

#include "core/timing_defaults.hpp"
#include "fixtures/fixture.hpp"
#include "gates/gate_file.hpp"
#include "gates/verdict.hpp"
#include "reference/attention_problem.hpp"

namespace ts {

// Runs a side needs before samples of different timing runs are compared.
inline constexpr int kMinTimingRuns = 3;

struct TimingOptions {
  int pairs = kGateTiming.pairs, warmup = kGateTiming.warmup;
  int rotate = kGateTiming.rotate;  // input copies timed runs cycle through
  double budget_s = 0;  // > 0: stop timing a candidate after this long (min 3 pairs)
  uint64_t seed = 1;    // bootstrap seed
};

class SpeedMeasurer {
 public:
  SpeedMeasurer(const Fixture& fx, const AttentionProblem& problem, const GateFile& gate, const TimingOptions& opts);
  SpeedEvidence measure(AttentionBackend& candidate, AttentionBackend& baseline) const;
  struct Inputs;  // the rotated input copies

 private:
  std::shared_ptr<const Inputs> in_;
  double confidence_;
  TimingOptions opts_;
};

// Speed evidence from two sides' stored samples alone (no run here): paired
// by round within one timing run, else through run medians, else missing.
// `cand_runs`/`base_runs`: the timing run of each sample (empty: unknown).
SpeedEvidence stored_speed(const std::vector<double>& cand_ms, const std::vector<std::string>& cand_runs,
                           const std::vector<double>& base_ms, const std::vector<std::string>& base_runs,
                           double confidence);

}  // namespace ts
