#include "history/series.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

namespace ts::history {

std::string Series::metric_label() const {
  return metric + " vs " + against + (tensor.empty() || tensor == "attention" ? "" : " [" + tensor + "]");
}

std::string Series::fixture_label() const {
  return fixture_identity ? *fixture_identity : "unsealed " + fixture_path;
}

std::vector<Series> build_series(const std::vector<StoredFigure>& figures, const DetectOptions& o) {
  using Key = std::tuple<std::string, std::string, std::string, std::string, std::string, std::string>;
  std::map<Key, size_t> index;
  std::vector<Series> out;
  for (const StoredFigure& f : figures) {
    const std::string fixture_key = f.fixture_identity ? "id:" + *f.fixture_identity : "path:" + f.fixture_path;
    const Key k{f.candidate, fixture_key, f.gate, f.metric, f.against, f.tensor};
    auto it = index.find(k);
    if (it == index.end()) {
      it = index.emplace(k, out.size()).first;
      Series s;
      s.candidate = f.candidate;
      s.gate = f.gate;
      s.metric = f.metric;
      s.against = f.against;
      s.tensor = f.tensor;
      s.fixture_identity = f.fixture_identity;
      s.fixture_path = f.fixture_path;
      out.push_back(std::move(s));
    }
    Series& s = out[it->second];
    if (std::find(s.rule_ids.begin(), s.rule_ids.end(), f.rule_id) == s.rule_ids.end()) s.rule_ids.push_back(f.rule_id);
    if (!f.figure || !std::isfinite(*f.figure)) {
      ++s.missing;
      continue;
    }
    // The rule's latest sense decides (a gate edited to bound from below reads the series so).
    s.sense.worse = f.worse.empty() ? "up" : f.worse;
    if (f.bound_min && f.bound_max) s.sense.center = (*f.bound_min + *f.bound_max) / 2;
    std::optional<double> w;
    if (f.lower && f.upper && std::isfinite(*f.lower) && std::isfinite(*f.upper) && *f.upper >= *f.lower) {
      const double conf = f.confidence && *f.confidence > 0 && *f.confidence < 1 ? *f.confidence : 0.95;
      w = (*f.upper - *f.lower) / (2 * normal_quantile((1 + conf) / 2));
    }
    s.points.push_back(f);
    s.within.push_back(w);
  }
  for (Series& s : out) {
    std::vector<double> y;
    for (const auto& p : s.points) y.push_back(*p.figure);
    s.detection = detect_changes(y, s.within, s.sense, o);
  }
  return out;
}

bool counts_as_regression(const Change& c, double min_change) {
  return c.worse && (!c.relative || std::fabs(*c.relative) >= min_change);
}

bool latest_change_regresses(const Series& s, double min_change) {
  return !s.detection.changes.empty() && counts_as_regression(s.detection.changes.back(), min_change);
}

SinceAccept since_last_accept(const Series& s) {
  SinceAccept r;
  for (size_t i = s.points.size(); i-- > 0;)
    if (s.points[i].verdict == "ACCEPT") {
      r.accepted = i;
      break;
    }
  if (!r.accepted) return r;
  const double then = *s.points[*r.accepted].figure, now = *s.points.back().figure;
  if (then != 0) r.relative = (now - then) / std::fabs(then);
  for (const Change& c : s.detection.changes)
    if (c.index > *r.accepted) r.changes.push_back(c);
  return r;
}

}  // namespace ts::history
