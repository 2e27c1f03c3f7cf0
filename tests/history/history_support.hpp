#pragma once
// Runs of a synthetic candidate for the history tests, judged by the one judge (gates/verdict.cpp)
// and recorded through the library: cheap enough to record forty of them in a test.
#include <chrono>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "gates/judge_for_tests.hpp"
#include "gates/bootstrap.hpp"
#include "gates/gate_file.hpp"
#include "gates/verdict.hpp"
#include "history/store.hpp"

namespace ts::test {

// Seeded normal noise (splitmix64 + Box-Muller): the same figures on every machine.
struct Noise {
  uint64_t s;
  explicit Noise(uint64_t seed) : s(seed) {}
  double uniform() {
    uint64_t z = (s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return (static_cast<double>(z >> 11) + 0.5) / 9007199254740992.0;
  }
  double normal() { return std::sqrt(-2 * std::log(uniform())) * std::cos(6.283185307179586 * uniform()); }
};

inline GateFile steps_gate() {
  return parse_gate(R"({"schema": "touchstone.gate/1", "name": "steps", "baseline": "sage2",
    "rules": [{"id": "sage_like", "metric": "rel_l2", "against": "baseline", "max": 0.05},
              {"id": "faster", "metric": "speedup", "against": "baseline", "min": 1.0}]})",
                    "steps gate");
}

// One run of the candidate: its rel_l2 (deterministic) and `pairs` timed pairs, the candidate's
// time `cand_ms` against the baseline's 12 ms, with `noise` relative noise on every sample and on
// the candidate's level from run to run; the speedup interval is the gate's own bootstrap of the
// paired ratios.
inline GateRun synthetic_run(const GateFile& gate, const std::string& candidate, double rel_l2, double cand_ms,
                             double noise, Noise& rng, uint64_t seed, int pairs = 15) {
  Evidence ev;
  ev.candidate = candidate;
  ev.vs_baseline["attention"] = {{"rel_l2", rel_l2}, {"nonfinite", 0.0}, {"zero_fraction", 0.0}, {"zero_fraction_ref", 0.0}};
  const double cand_level = cand_ms * (1 + noise * rng.normal()), base_level = 12;
  std::vector<double> ratios, cand, base;
  for (int i = 0; i < pairs; ++i) {
    cand.push_back(cand_level * (1 + noise * rng.normal()));
    base.push_back(base_level * (1 + noise * rng.normal()));
    ratios.push_back(base.back() / cand.back());
  }
  SpeedEvidence sp;
  sp.clock = kClockHost;
  sp.interval = bootstrap_paired(ratios, 0.95, seed);
  sp.candidate_ms = median_of(cand);
  sp.baseline_ms = median_of(base);
  sp.level = "synthetic";
  ev.speed = sp;
  ev.details["speed"] = sp.to_json();
  ev.details["speed"]["timing_run"] = "run" + std::to_string(seed);
  ev.details["vs_baseline"] = {{"rel_l2", rel_l2}};
  ev.details["worst_vs_baseline"] = {{"metric", "rel_l2"},
                                     {"per_head", {{{"index", 3}, {"value", rel_l2 * 1.4}}}},
                                     {"per_query_block", {{{"index", 0}, {"value", rel_l2 * 1.2}}}},
                                     {"per_frame", {{{"index", 1}, {"value", rel_l2 * 1.1}}}}};
  GateRun run;
  run.gate = gate;
  run.mode = "fixture";
  run.input = "synthetic.h5";
  run.baseline = "sage2";
  run.context = {{"fixture", "synthetic.h5"}, {"fixture_identity", "sha256:synthetic"}};
  run.candidates.push_back(judge_for_test(gate, ev, ""));
  return run;
}

// Forty runs: rel_l2 0.02 stepping up `l2_step` at run 25, time 10 ms stepping up `time_step` at
// run 30, commits c01..c40, one second apart.
inline void record_forty(const std::string& db, double l2_step, double time_step, uint64_t seed) {
  const GateFile gate = steps_gate();
  Noise rng(seed);
  history::Store st = history::Store::open_for_append(db);
  const auto t0 = std::chrono::system_clock::time_point(std::chrono::seconds(1796000000));
  for (int k = 1; k <= 40; ++k) {
    const double l2 = 0.02 * (k >= 25 ? 1 + l2_step : 1), ms = 10 * (k >= 30 ? 1 + time_step : 1);
    const GateRun run = synthetic_run(gate, "sol:tau=1.3", l2, ms, 0.02, rng, seed * 1000 + static_cast<uint64_t>(k));
    history::Provenance p;
    p.command = "gate";
    p.commit = (k < 10 ? "c0" : "c") + std::to_string(k);
    p.commit_source = "flag";
    p.touchstone_version = TOUCHSTONE_VERSION;
    st.append(history::make_run_record(run, p, t0 + std::chrono::seconds(k)));
  }
}

}  // namespace ts::test
