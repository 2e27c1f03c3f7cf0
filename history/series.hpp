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

// A series whose latest change is a regression of at least `min_change` (relative; a change
// from 0 always counts).
bool latest_change_regresses(const Series& s, double min_change);

struct SinceAccept {
  std::optional<size_t> accepted;  // the last point whose case was ACCEPTed
  std::optional<double> relative;  // latest value against the accepted one
  std::vector<Change> changes;     // detected changes after the accepted point
};
SinceAccept since_last_accept(const Series& s);

}  // namespace ts::history
