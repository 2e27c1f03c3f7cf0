#pragma once
// touchstone compare F --stages A B [--gate G] [--exact E]: the block's stages
// side by side, each judged by the same judge() as `touchstone gate`.
//
// A and B name stage sets of the fixture:
//   observed   /block/stages/<stage> (the captured run)
//   NAME       /outputs/NAME/stages/<stage> (a touchstone reference run)
//   recompute  (as B only) the elementwise stages of the stage table
//              recomputed from A's own inputs with the block's definition in
//              A's storage type (how a fused modulation, gate or SwiGLU
//              kernel is judged; default gate block-elementwise-bit-exact).
// A is the candidate, B the baseline; E (optional) an exact stage set, which
// rules "against": "exact" and max_ratio_to_baseline need (without it they
// are missing, so INCONCLUSIVE). Rules name a stage in "tensor", or "stages"
// for every stage. The default gate is gates/stages-default.json (no NaN/Inf,
// and the stage table's growth bounds). Speed rules are missing (a stage set
// carries no timing samples). A stage no rule names is not judged ("–").
#include <optional>
#include <string>
#include <vector>

#include "gates/metrics.hpp"
#include "gates/verdict.hpp"

namespace ts {

struct StageComparisonOptions {
  std::string gate;   // path or built-in name; "" = the default for B
  std::string exact;  // an exact stage set; "" = none
};

struct StageRow {
  std::string stage;
  std::string missing_in;  // non-empty: absent in that set (not compared)
  std::optional<MetricSet> metrics;
  std::string dtype;
  std::optional<CandidateVerdict> verdict;  // absent: no rule names the stage
  // "pass", "fail", "inconclusive", "–" (no rule) or "skip" (absent).
  std::string status() const;
};

struct StageComparison {
  std::string fixture, a, b, exact;
  GateRun run;  // one "candidate" per judged stage, for the shared reports
  std::vector<StageRow> rows;
  int compared = 0;
  std::string first_failing, first_inconclusive;
  int exit_code() const;  // 0 when every judged stage passes, 1 otherwise
};  // its terminal table and JSON: report/stage_report.hpp

// Bad sets, gate or shapes -> InputError.
StageComparison compare_stages(const std::string& fixture, const std::string& a, const std::string& b,
                               const StageComparisonOptions& opts);

}  // namespace ts
