#pragma once
// Recorded figures grouped into series, one per candidate x fixture x gate x metric (against,
// tensor), in record order, each with its detected changes (history/change_detection.hpp);
// and the two questions asked of them: did the latest change regress, what moved since the
// kernel last passed.
#include <optional>
#include <string>
#include <vector>

#include "history/change_detection.hpp"
#include "history/store.hpp"

namespace ts::history {

struct Series {
  std::string candidate, gate, metric, against, tensor;
  std::optional<std::string> fixture_identity;  // none: unsealed, keyed by path
  std::string fixture_path;
  std::vector<std::string> rule_ids;  // the rules that judged it (usually one)
  Sense sense;
  std::vector<StoredFigure> points;  // finite figures only
  std::vector<std::optional<double>> within;  // each point's own standard uncertainty
  size_t missing = 0;  // records of the rule without a finite figure (missing, NaN)
  Detection detection;

  std::string metric_label() const;   // "rel_l2 vs baseline", "speedup vs baseline [attn_out]"
  std::string fixture_label() const;  // the identity, or "unsealed PATH"
};

std::vector<Series> build_series(const std::vector<StoredFigure>& figures, const DetectOptions& o = {});

// The smallest relative worsening that is a regression, unless --min-change says otherwise.
inline constexpr double kDefaultMinChange = 0.02;

// The one rule of what a regression is, for every view of the history (the series' text and
// page, --regressions, JSON): a change worse by the rule's sense of at least `min_change`
// relative to the level before (a change from 0 always counts). A smaller worsening is
// reported as worse, never as a regression that --regressions would then pass.
bool counts_as_regression(const Change& c, double min_change);
// A series whose latest change counts as a regression.
bool latest_change_regresses(const Series& s, double min_change);

struct SinceAccept {
  std::optional<size_t> accepted;  // the last point whose case was ACCEPTed
  std::optional<double> relative;  // latest value against the accepted one
  std::vector<Change> changes;     // detected changes after the accepted point
};
SinceAccept since_last_accept(const Series& s);

}  // namespace ts::history
