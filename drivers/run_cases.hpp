#pragma once
// The one loop (README "Architecture"): every verdict touchstone gives comes
// from run_cases(), which gathers each case's evidence from its source and
// calls judge() on it. The drivers only make case lists: `gate` one case per
// candidate, `sweep` one per tau and stored output, `demo` a fixed list, the
// stage comparison one per stage, `batch` a plan's cases.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "drivers/case.hpp"
#include "drivers/speed_evidence.hpp"
#include "gates/gate_file.hpp"
#include "gates/verdict.hpp"

namespace ts {

// What a case's row shows beside its verdict (a sweep's density, distances,
// one run's wall time); no rule reads these.
struct CaseFigures {
  std::string backend;  // the backend's own name (output group name)
  std::optional<double> density, wall_ms;
  std::optional<double> rel_l2_vs_baseline, rel_l2_vs_exact, cosine_vs_baseline, cosine_vs_exact, nonfinite;
  std::optional<double> timings_median_ms;  // a stored output's own samples
  std::string timings_clock;
  nlohmann::json stats = nlohmann::json::object();  // the backend's run statistics
  nlohmann::json to_json() const;
};

struct CaseResult {
  Case c;
  CaseFigures figures;
};

// A run of cases: the verdicts as one GateRun (for the report writers), and
// per case its figures, in the order of the cases.
struct CaseRun {
  GateRun run;
  std::vector<CaseResult> results;
  // Per fixture: which exact reference, the baseline's own distance from it.
  nlohmann::json fixtures = nlohmann::json::object();
  // Per fixture: the exact reference's and each baseline's own run (name, wall ms).
  nlohmann::json reference_runs = nlohmann::json::object();
};

// Where the evidence of one source of cases comes from. Fixture cases
// (computed, stored) and measurements have theirs built in; the stage
// comparison brings its own.
class EvidenceProvider {
 public:
  virtual ~EvidenceProvider() = default;
  // Everything that can be checked before work starts (bad input: InputError).
  virtual void prepare(const std::vector<const Case*>& cases) = 0;
  virtual Evidence gather(const Case& c, CaseFigures& figures) = 0;
  // The gate a case is judged by, when not the run's (a stage's own rules).
  virtual const GateFile* gate_for(const Case&) { return nullptr; }
};

// Bad cases, specs, fixtures or gate -> InputError before any case runs; a
// candidate that throws while running is REJECT with its error and the other
// cases are still judged; an InputError while running (a stored output that
// turns out malformed) stops the run as bad input. The run's options are the
// cases' own (make_cases gives every case of a request the same; cases whose
// options would judge differently are an InternalError).
// Stage and chain cases bring their own evidence: `stage_provider` gathers it.
CaseRun run_cases(const GateFile& gate, const std::vector<Case>& cases, EvidenceProvider* stage_provider = nullptr);

// The same loop with no gate: each case's figures (a sweep without --gate); no verdicts.
CaseRun case_figures(const std::vector<Case>& cases);

// Whether any rule of the gate is a speed rule.
bool has_speed_rule(const GateFile& gate);

}  // namespace ts
