#pragma once
// Verdicts (gates/README.md "Verdicts"): ACCEPT when every rule passed, REJECT when any failed
// (a failed rule outranks a missing one), INCONCLUSIVE when a speed interval
// straddles its bound or a required measurement is missing. A figure equal
// to its bound passes. NaN never passes.
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gates/bootstrap.hpp"
#include "gates/gate_file.hpp"
#include "gates/worst_group.hpp"

namespace ts {

// MISTRUSTED (benchdnn's word): the evidence itself cannot be trusted (the
// baseline is not finite, a kernel's stored time is beyond what the hardware
// can do), so the candidate is neither accepted nor rejected; it fails the run.
enum class Verdict { accept, reject, inconclusive, mistrusted };
enum class RuleStatus { pass, fail, missing, inconclusive };
// The one list of verdicts and their words, in this order: every report, batch record,
// summary and the Python package (touchstone._core.Verdict, tables.VERDICTS) read it.
struct VerdictWords {
  Verdict verdict;
  const char* name;     // "ACCEPT": reports, records, the results store
  const char* key;      // "accept": summary counts in JSON, CSS classes
  const char* counted;  // "accepted": summary prose ("2 accepted, 1 rejected")
  // Summaries list the verdict even when no candidate got it; MISTRUSTED only when one did,
  // so that the reports of runs without one read as they did before it existed.
  bool always_counted;
};
const std::vector<VerdictWords>& verdict_table();
const char* verdict_name(Verdict v);  // "ACCEPT", "REJECT", "INCONCLUSIVE", "MISTRUSTED"
// InputError naming `where` for a word that is no verdict's name.
Verdict verdict_from_name(const std::string& name, const std::string& where);
const char* rule_status_name(RuleStatus s);  // "pass", "fail", "missing", "inconclusive"

// Share of exact zeros in the candidate beyond the reference's share above
// which the candidate is rejected on every gate (the "return zeros" cheat).
inline constexpr double kZeroGuardExcess = 0.5;

// metric name -> figure; present with nullopt = undefined (e.g. rel_l2 when
// ||b|| = 0), absent = not measured. Keys as metric_map() gives them.
using Figures = std::map<std::string, std::optional<double>>;

// The clock a timing sample was taken on. Samples on different clocks never
// pair (a device's CUDA-event time omits the host work a steady-clock time
// holds); /timings without a clock attribute are "unknown" and pair with
// nothing.
inline constexpr const char* kClockDevice = "device_events";  // CUDA events around the kernels
inline constexpr const char* kClockHost = "host_steady";      // the host's steady clock
inline constexpr const char* kClockImported = "imported";     // a single figure from a report
inline constexpr const char* kClockUnknown = "unknown";
// A speed rule is judged only on at least this many samples a side.
inline constexpr int kMinTimingSamples = 3;

struct SpeedEvidence {
  std::string clock;  // which clock decided (kClock*), empty when nothing was timed
  // Non-empty: the speed cannot be judged, and why (no timings, clocks
  // differ, too few samples); speed rules are then missing.
  std::string missing;
  std::optional<Interval> interval;  // from samples
  // The deciding figures: single figures, or the medians of the samples.
  std::optional<double> candidate_ms, baseline_ms;
  bool single_figure = false;  // judged on single figures (no samples)
  std::string level;           // what was timed, e.g. "block attention p50"
  std::string note;            // e.g. "levels differ"
  nlohmann::json other_levels = nlohmann::json::array();  // [{level, quantity, candidate, baseline, unit, speedup}]
  nlohmann::json to_json() const;
};

// Everything measured for one candidate; the gate engine judges only this.
struct Evidence {
  std::string candidate;
  std::string error;  // non-empty: the candidate failed to run -> REJECT
  // Per tensor ("attention", a stage name): candidate vs baseline, candidate
  // vs exact, baseline vs exact.
  std::map<std::string, Figures> vs_baseline, vs_exact, baseline_vs_exact;
  // Per tensor, per breakdown metric (rel_l2_worst_head, ...): the group that
  // gave the figure, ranked against that reference, so that a failing group
  // rule names where it failed.
  std::map<std::string, std::map<std::string, WorstGroup>> worst_vs_baseline, worst_vs_exact;
  // Per tensor: the unit roundoff of the coarser storage type when the two
  // sides are stored in different types (bf16 vs float64: 2^-8), else 0; a
  // growth rule with `rounding` allows it.
  std::map<std::string, double> roundoff;
  std::optional<SpeedEvidence> speed;
  std::vector<std::string> notes;
  // Non-empty: why the evidence cannot be trusted -> MISTRUSTED, whatever the rules say.
  std::vector<std::string> mistrusted;
  nlohmann::json details = nlohmann::json::object();  // metrics, timings, for the JSON report
};

struct RuleOutcome {
  std::string id, metric, against, tensor;
  RuleStatus status = RuleStatus::missing;
  std::optional<double> figure;
  std::string bound;    // "<= 0.05"
  std::string message;  // one line: figure vs bound, or what is missing and why
  bool builtin = false;   // zero_guard, finite_guard, run
  bool optional = false;  // a missing figure does not make the candidate INCONCLUSIVE
  std::optional<Interval> interval;
  // max_ratio_to_baseline resolved to a figure (k x the baseline's), kept as
  // a number so that plots can draw it; `bound` holds it only as text.
  std::optional<double> limit;
  // A group rule's worst group against the rule's own reference (when known).
  std::optional<WorstGroup> worst;
  nlohmann::json to_json() const;
};

struct CandidateVerdict {
  std::string candidate;
  Verdict verdict = Verdict::inconclusive;
  std::vector<RuleOutcome> outcomes;  // gate rules in order, then built-in checks
  std::vector<std::string> notes;
  std::string error;
  std::string repro;  // one-line command reproducing a verdict that is not ACCEPT
  std::string clock;  // the clock the speed was judged on; empty when no speed rule was judged
  // Values of GateRun::columns for this candidate, in that order (a sweep's tau, density, ...).
  std::vector<std::string> shown;
  nlohmann::json details = nlohmann::json::object();
  nlohmann::json to_json() const;
};

// Who may call judge(): the one case loop (ts::CaseLoop, drivers/run_cases.cpp) and the rule
// engine's own tests (ts::RuleEngineTests, tests/gates/judge_for_tests.hpp). A driver that judged
// on its own would drift from the loop (its evidence, its repro line); here it does not compile
// (tests/architecture/judge_outside_the_loop.cpp checks that it does not).
class JudgeKey {
  JudgeKey() = default;
  friend class CaseLoop;
  friend struct RuleEngineTests;
};

// `repro` is kept only when the verdict is not ACCEPT.
CandidateVerdict judge(const GateFile& gate, const Evidence& evidence, const std::string& repro, JudgeKey key);

// Candidates per verdict, in verdict_table() order (those not always counted only when
// present): what every summary line and summary object is made of.
struct VerdictCounts {
  std::vector<std::pair<const VerdictWords*, int>> counts;
  int total = 0;
  void add(Verdict v);
  int of(Verdict v) const;
  nlohmann::json to_json() const;  // {"accept": 2, "reject": 1, "inconclusive": 0[, "mistrusted": 1]}
  std::string text(bool names) const;  // "2 accepted, 1 rejected, 0 inconclusive" / "2 ACCEPT, 1 REJECT, ..."
};
VerdictCounts count_verdicts(const std::vector<CandidateVerdict>& candidates);

struct GateRun {
  GateFile gate;
  std::string mode;   // "fixture" or "measurements"
  std::string input;  // fixture or measurements path
  std::string baseline;
  std::vector<CandidateVerdict> candidates;
  // Figures every report shows before the rules, one title per column (a sweep's tau, density,
  // distances): what the reader needs beside the verdict and is not itself a rule's figure.
  std::vector<std::string> columns;
  nlohmann::json context = nlohmann::json::object();  // seed, pairs, report metadata, ...
  int exit_code() const;  // 0 all accepted, 1 otherwise
  nlohmann::json to_json() const;
};

}  // namespace ts
