#include "report/history_report.hpp"

#include <cmath>
#include <cstdio>
#include <sstream>

#include "gates/gate_file.hpp"
#include "report/gate_report.hpp"
#include "report/text_columns.hpp"

namespace ts::history {
namespace {

nlohmann::json opt(const std::optional<double>& v) {
  return v && std::isfinite(*v) ? nlohmann::json(*v) : nlohmann::json(nullptr);
}


std::string percent(const std::optional<double>& rel) { return change_percent(rel); }

std::string evidence_of(const Series& s, const Change& c) {
  std::string e = "level " + format_number(c.before, 6) + " over " + std::to_string(c.points_before) + " run(s), then " +
                  format_number(c.after, 6) + " over " + std::to_string(c.points_after) + " run(s); ";
  if (s.detection.deterministic && s.detection.scatter == 0)
    e += "a deterministic figure, compared exactly (relative floor 1e-9)";
  else
    e += "z = " + format_number(c.z, 3) + " (points weighted by their uncertainty; series scatter " +
         format_number(s.detection.scatter, 3) + ")";
  return e;
}

nlohmann::json change_json(const HistoryView& v, const Series& s, const Change& c) {
  const StoredFigure& p = s.points[c.index];
  return {{"index", c.index},
          {"run_id", p.run_id},
          {"commit", p.commit.empty() ? nlohmann::json(nullptr) : nlohmann::json(p.commit)},
          {"recorded_at", p.recorded_at},
          {"before", c.before},
          {"after", c.after},
          {"relative", opt(c.relative)},
          {"z", opt(c.z)},
          {"points_before", c.points_before},
          {"points_after", c.points_after},
          // "worse": by the rule's sense, but under --min-change, so no regression.
          {"direction", !c.worse ? "improvement" : counts_as_regression(c, v.min_change) ? "regression" : "worse"},
          {"evidence", evidence_of(s, c)}};
}

nlohmann::json series_head(const Series& s) {
  return {{"candidate", s.candidate},
          {"fixture",
           {{"identity", s.fixture_identity ? nlohmann::json(*s.fixture_identity) : nlohmann::json(nullptr)},
            {"path", s.fixture_path},
            {"sealed", s.fixture_identity.has_value()}}},
          {"gate", s.gate},
          {"metric", s.metric},
          {"against", s.against},
          {"tensor", s.tensor},
          {"rules", s.rule_ids},
          {"worse", s.sense.worse}};
}

// Terminal text names the inputs in short: the fixture's identity as a prefix unique in the store.
struct Names {
  const HistoryView& v;
  std::string commit(const std::string& c) const { return c.empty() ? "-" : v.short_commits(c); }
  std::string fixture(const Series& s) const {
    return s.fixture_identity ? "fixture " + v.short_fixtures(identity_digits(*s.fixture_identity))
                              : s.fixture_label();
  }
  // The rule and its metric first: what a reader scans for, and what a narrow terminal must keep.
  std::string rule(const Series& s) const {
    std::string ids;
    for (const auto& id : s.rule_ids) ids += (ids.empty() ? "" : ",") + id;
    return ids + ": " + s.metric_label();
  }
  std::string where(const Series& s) const { return s.candidate + " | " + fixture(s) + " | gate " + s.gate; }
};

std::string series_title(const Names& n, const Series& s) {
  const std::string bound = s.points.empty() ? "" : s.points.back().bound;
  return n.rule(s) + (bound.empty() ? "" : " (" + bound + ")") + " | " + n.where(s);
}

std::string change_line(const Names& n, const Series& s, const Change& c) {
  const StoredFigure& p = s.points[c.index];
  return "  change at #" + std::to_string(c.index + 1) + " (commit " + n.commit(p.commit) + ", " +
         p.recorded_at.substr(0, 19) + "): " + change_levels(c.before, c.after) + " (" + percent(c.relative) + "), " +
         change_kind(n.v, c) +
         (s.detection.deterministic && s.detection.scatter == 0 ? ", exact" : ", z = " + format_number(c.z, 3));
}

}  // namespace

std::string change_percent(const std::optional<double>& relative) {
  if (!relative) return "from 0";
  char buf[48];
  std::snprintf(buf, sizeof buf, "%+.2f %%", 100 * *relative);
  // A change that rounds to +-0.00 % would read as none (or as a regression of nothing).
  if (*relative != 0 && std::fabs(100 * *relative) < 0.005) std::snprintf(buf, sizeof buf, "%+.2g %%", 100 * *relative);
  return buf;
}

std::string change_levels(double before, double after) {
  int digits = 6;
  while (digits < 17 && before != after && format_number(before, digits) == format_number(after, digits)) ++digits;
  return format_number(before, digits) + " -> " + format_number(after, digits);
}

int figure_digits(const Series& s) {
  int digits = 6;
  for (const Change& c : s.detection.changes) {
    if (c.index == 0 || c.index >= s.points.size()) continue;
    const double a = *s.points[c.index - 1].figure, b = *s.points[c.index].figure;
    while (digits < 17 && a != b && format_number(a, digits) == format_number(b, digits)) ++digits;
  }
  return digits;
}

std::string change_kind(const HistoryView& v, const Change& c) {
  if (!c.worse) return "improvement";
  if (counts_as_regression(c, v.min_change)) return "REGRESSION";
  return "worse, not a regression (under --min-change " + change_percent(v.min_change).substr(1) + ")";
}

nlohmann::json history_json(const HistoryView& v) {
  nlohmann::json j;
  j["schema"] = "touchstone.history/1";
  j["store"] = v.store;
  j["store_schema_version"] = v.schema_version;
  j["filters"] = {{"kernel", v.filters.kernel},
                  {"fixture", v.filters.fixture},
                  {"gate", v.filters.gate},
                  {"metric", v.filters.metric},
                  {"since", v.filters.since}};
  nlohmann::json series = nlohmann::json::array(), changes = nlohmann::json::array();
  for (const Series& s : v.series) {
    nlohmann::json sj = series_head(s);
    sj["deterministic"] = s.detection.deterministic;
    sj["scatter"] = s.detection.scatter;
    sj["penalty"] = s.detection.penalty;
    sj["missing"] = s.missing;
    nlohmann::json pts = nlohmann::json::array();
    for (size_t i = 0; i < s.points.size(); ++i) {
      const StoredFigure& p = s.points[i];
      pts.push_back({{"run_id", p.run_id},
                     {"recorded_at", p.recorded_at},
                     {"commit", p.commit.empty() ? nlohmann::json(nullptr) : nlohmann::json(p.commit)},
                     {"value", *p.figure},
                     {"sigma", s.detection.sigma[i]},
                     {"lower", opt(p.lower)},
                     {"upper", opt(p.upper)},
                     {"bound", p.bound},
                     {"status", p.status},
                     {"verdict", p.verdict},
                     {"device", p.device},
                     {"clock", p.clock},
                     {"timing_run", p.timing_run},
                     {"candidate_ms", opt(p.candidate_ms)},
                     {"baseline_ms", opt(p.baseline_ms)}});
    }
    sj["points"] = pts;
    nlohmann::json segs = nlohmann::json::array();
    for (const Segment& g : s.detection.segments)
      segs.push_back({{"begin", g.begin}, {"end", g.end}, {"level", g.level}, {"standard_error", g.standard_error}});
    sj["segments"] = segs;
    nlohmann::json cs = nlohmann::json::array();
    for (const Change& c : s.detection.changes) {
      cs.push_back(change_json(v, s, c));
      nlohmann::json flat = series_head(s);
      flat.update(change_json(v, s, c));
      changes.push_back(flat);
    }
    sj["changes"] = cs;
    if (v.since_last_accept) {
      const SinceAccept sa = since_last_accept(s);
      nlohmann::json sl;
      sl["accepted"] = sa.accepted ? nlohmann::json(s.points[*sa.accepted].commit) : nlohmann::json(nullptr);
      sl["accepted_index"] = sa.accepted ? nlohmann::json(*sa.accepted) : nlohmann::json(nullptr);
      sl["accepted_value"] = sa.accepted ? nlohmann::json(*s.points[*sa.accepted].figure) : nlohmann::json(nullptr);
      sl["latest_value"] = s.points.empty() ? nlohmann::json(nullptr) : nlohmann::json(*s.points.back().figure);
      sl["relative"] = opt(sa.relative);
      nlohmann::json after = nlohmann::json::array();
      for (const Change& c : sa.changes) after.push_back(change_json(v, s, c));
      sl["changes"] = after;
      sj["since_last_accept"] = sl;
    }
    series.push_back(sj);
  }
  j["series"] = series;
  j["changes"] = changes;
  j["min_change"] = v.min_change;
  if (v.check_regressions) {
    nlohmann::json r = nlohmann::json::array();
    for (const Series* s : regressions(v)) {
      nlohmann::json x = series_head(*s);
      x.update(change_json(v, *s, s->detection.changes.back()));
      r.push_back(x);
    }
    j["regressions"] = r;
  }
  return j;
}

std::string history_text(const HistoryView& v, size_t width) {
  std::ostringstream o;
  size_t points = 0, nchanges = 0;
  for (const Series& s : v.series) {
    points += s.points.size();
    nchanges += s.detection.changes.size();
  }
  const Names n{v};
  // Long lines wrap (continuations indented past the line's own indent), so nothing is cut.
  auto line = [&](const std::string& l) { o << wrap_each_line(l, static_cast<int>(width)); };
  line(v.store + ": " + std::to_string(v.series.size()) + " series, " + std::to_string(points) + " figures, " +
       std::to_string(nchanges) + " change(s)");
  if (v.series.empty()) line("nothing recorded matches the filters");
  for (const Series& s : v.series) {
    o << "\n";
    line(series_title(n, s));
    if (v.since_last_accept) {
      const SinceAccept sa = since_last_accept(s);
      if (!sa.accepted) {
        line("  never ACCEPTed in these records; latest " +
             (s.points.empty() ? std::string("none") : format_number(*s.points.back().figure, 6)));
        continue;
      }
      const StoredFigure& a = s.points[*sa.accepted];
      line("  last ACCEPT #" + std::to_string(*sa.accepted + 1) + " (commit " + n.commit(a.commit) + ", " +
           a.recorded_at.substr(0, 19) + "): " + format_number(*a.figure, 6) + "; latest " +
           format_number(*s.points.back().figure, 6) + " (" + percent(sa.relative) + ")");
      if (sa.changes.empty()) line("  no change since");
      for (const Change& c : sa.changes) line(change_line(n, s, c));
      continue;
    }
    // Columns as wide as their cells (a commit prefix grows where two commits share 12
    // characters), laid out to the width: the header stays over its column whatever fits.
    const int digits = figure_digits(s);
    std::vector<std::vector<std::string>> rows;
    for (size_t i = 0; i < s.points.size(); ++i) {
      const StoredFigure& p = s.points[i];
      const bool exact = !s.within[i] && s.detection.scatter == 0;
      rows.push_back({std::to_string(i + 1), p.recorded_at.substr(0, 19), n.commit(p.commit),
                      format_number(*p.figure, digits), exact ? "exact" : format_number(s.detection.sigma[i], 3), p.status,
                      p.verdict});
    }
    o << aligned_columns({{"#", true}, {"recorded (UTC)"}, {"commit"}, {"figure", true}, {"sigma", true}, {"status"},
                          {"verdict"}},
                         rows, width, 2);
    if (s.missing) line("  " + std::to_string(s.missing) + " record(s) without a finite figure (missing or NaN), not plotted");
    if (s.detection.changes.empty()) line("  no change");
    for (const Change& c : s.detection.changes) line(change_line(n, s, c));
  }
  if (v.check_regressions) {
    const auto regs = regressions(v);
    o << "\n";
    if (regs.empty())
      line("no regression: no series' latest change is a regression of " + percent(v.min_change).substr(1) + " or more");
    for (const Series* s : regs) {
      const Change& c = s->detection.changes.back();
      line("REGRESSION " + n.rule(*s) + " " + percent(c.relative) + " at commit " +
           n.commit(s->points[c.index].commit) + " | " + n.where(*s));
    }
  }
  return o.str();
}

}  // namespace ts::history
