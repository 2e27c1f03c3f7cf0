// The JSON of `touchstone scan` (schema touchstone.scan/1). A figure that is not finite is
// null, with its text beside it: JSON has no NaN or Infinity.
#include <cmath>
#include <optional>

#include "gates/gate_file.hpp"
#include "report/scan_report.hpp"

namespace ts {
namespace {

nlohmann::json finite_or_null(const std::optional<double>& v) {
  return v && std::isfinite(*v) ? nlohmann::json(*v) : nlohmann::json();
}

nlohmann::json evaluation_json(const ScanEvaluation& e) {
  nlohmann::json j{{"x", e.x}, {"order", e.order}, {"grid", e.grid}, {"ms", e.ms}};
  j["figure"] = finite_or_null(e.figure);
  if (e.figure && !std::isfinite(*e.figure)) j["figure_text"] = format_number(*e.figure);
  if (!e.error.empty()) j["error"] = e.error;
  return j;
}

nlohmann::json cliff_json(const ScanCliff& c) {
  return {{"below", c.below},
          {"above", c.above},
          {"figure_below", finite_or_null(c.figure_below)},
          {"figure_above", finite_or_null(c.figure_above)},
          {"located", c.located},
          {"text", c.text}};
}

template <class T>
nlohmann::json opt(const std::optional<T>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json();
}
nlohmann::json opt(const std::string& s) { return s.empty() ? nlohmann::json() : nlohmann::json(s); }

}  // namespace

nlohmann::json scan_json(const ScanResult& r) {
  const ScanOptions& o = r.options;
  nlohmann::json evals = nlohmann::json::array();
  for (const auto& e : r.search.evaluations) evals.push_back(evaluation_json(e));
  nlohmann::json others = nlohmann::json::array();
  for (const auto& [a, b] : r.search.other_departures) others.push_back({a, b});
  return {{"schema", "touchstone.scan/1"},
          {"candidate", opt(o.candidate)},
          {"worker", opt(o.worker)},
          {"candidate_name", r.candidate_name},
          {"exact", o.exact},
          {"metric", o.metric},
          {"figure", scan_figure_name(o.metric)},
          {"dim", scan_dim_name(o.dim)},
          {"preset", o.preset},
          {"fixed", {{"seq", opt(o.seq)}, {"heads", opt(o.heads)}, {"head_dim", opt(o.head_dim)}}},
          {"seed", o.seed},
          {"search", {{"from", o.search.from}, {"to", o.search.to}, {"points", o.search.points},
                      {"budget", o.search.budget}, {"multiple", o.search.multiple},
                      {"resolution", o.search.resolution}, {"jump", o.search.jump},
                      {"floor", o.search.floor}}},
          {"slope", opt(r.search.slope)},
          {"evaluations", evals},
          {"cliff", r.search.cliff ? cliff_json(*r.search.cliff) : nlohmann::json()},
          {"other_departures", others},
          {"exit_code", r.exit_code()}};
}

}  // namespace ts
