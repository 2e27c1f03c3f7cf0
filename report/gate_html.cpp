#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <sstream>

#include "report/markup.hpp"
#include "report/gate_report.hpp"
#include "report/page.hpp"
#include "report/svg_plot.hpp"

namespace ts {
namespace {

using svg::BoundLine;
using svg::Dot;

// The page must open from a CI artifact store or a mail attachment, offline:
// everything is inline and nothing needs a script.
const char* const kStyle = R"css(
body{font-family:system-ui,sans-serif;font-size:14px;line-height:1.45;color:#1f2328;background:#fff;max-width:1040px;margin:24px auto;padding:0 16px}
h1{font-size:22px;margin:0 0 8px}h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid #d0d7de;padding-bottom:4px}h3{font-size:15px;margin:18px 0 4px}
code,pre{font-family:ui-monospace,monospace;font-size:13px}pre{background:#f6f8fa;padding:8px;overflow-x:auto;white-space:pre-wrap;word-break:break-all}
table{border-collapse:collapse;margin:6px 0 12px}th,td{border:1px solid #d0d7de;padding:3px 8px;text-align:left;vertical-align:top}th{background:#f6f8fa}
td.num{font-family:ui-monospace,monospace;text-align:right;white-space:nowrap}
table.summary{width:100%}table.summary th,table.summary td{overflow-wrap:break-word}.badge{white-space:nowrap}
table.summary td.num{white-space:normal}table.summary th .note{font-weight:normal;font-size:12px}div.wide{max-width:100%;overflow-x:auto}
figure{margin:12px 0}
.badge{display:inline-block;padding:1px 8px;border-radius:4px;font-weight:600;color:#fff;font-size:13px}
.badge.accept{background:#1a7f37}.badge.reject{background:#cf222e}.badge.inconclusive{background:#9a6700}.badge.mistrusted{background:#6639ba}.badge.other{background:#57606a}
td.pass{color:#1a7f37}td.fail{color:#cf222e;font-weight:600}td.open,td.missing{color:#9a6700;font-weight:600}td.na{color:#57606a}
.gapcell{color:#9a6700;font-style:italic}.note{color:#57606a}.error{color:#cf222e}
svg.plot{display:block;max-width:100%;height:auto}
svg.plot text{font-family:system-ui,sans-serif;font-size:12px;fill:#1f2328}
svg.plot .tick,svg.plot .note{fill:#57606a}svg.plot .grid{stroke:#eaeef2}svg.plot .axis{stroke:#57606a;fill:none}
svg.plot .band{fill:#f6f8fa}svg.plot .bound{stroke:#cf222e;stroke-width:1.5;stroke-dasharray:6 3}svg.plot .boundtext{fill:#cf222e}
svg.plot .dot{stroke:#fff}svg.plot .dot.pass{fill:#1a7f37}svg.plot .dot.fail{fill:#cf222e}svg.plot .dot.open,svg.plot .dot.missing{fill:#9a6700}svg.plot .dot.na{fill:#57606a}
svg.plot .whisker{stroke:#57606a;stroke-width:1.5;fill:none}
svg.plot .gap{fill:none;stroke:#9a6700;stroke-dasharray:3 3}svg.plot .gaptext{fill:#9a6700;font-style:italic}
svg.plot .series{fill:none;stroke:#0969da;stroke-width:1.5}svg.plot .point{fill:#0969da}svg.plot .gapmark{stroke:#cf222e;stroke-width:2}
svg.plot .dot.group,svg.plot .dot.s0{fill:#0969da}svg.plot .dot.s1{fill:#8250df}svg.plot .dot.s2{fill:#bc4c00}svg.plot .dot.s3{fill:#bf3989}svg.plot .dot.s4{fill:#1b7c83}svg.plot .dot.s5{fill:#4d2d00}svg.plot .dot.floor{fill:#fff;stroke-width:2}
svg.plot .dot.floor.group,svg.plot .dot.floor.s0{stroke:#0969da}svg.plot .dot.floor.pass{stroke:#1a7f37}svg.plot .dot.floor.fail{stroke:#cf222e}svg.plot .dot.floor.open,svg.plot .dot.floor.missing{stroke:#9a6700}
svg.plot .series.s1{stroke:#8250df}svg.plot .series.s2{stroke:#bc4c00}svg.plot .series.s3{stroke:#bf3989}svg.plot .series.s4{stroke:#1b7c83}svg.plot .series.s5{stroke:#4d2d00}svg.plot .series.front{stroke:#57606a;stroke-dasharray:4 3}
svg.plot .noisefloor{stroke:#57606a;stroke-width:2}svg.plot .floortext{fill:#57606a;font-size:11px}svg.plot .value{font-size:11px}
svg.plot .span{fill:#ffebe9}svg.plot .spantext{fill:#cf222e;font-size:11px}svg.plot .legend{font-size:11px}
svg.plot .cell{stroke:#fff;stroke-width:0.5}svg.plot .cell.dense{stroke:none}svg.plot .hotmark{fill:#cf222e}svg.plot .cell.undefined{fill:#fff;stroke:#d0d7de}svg.plot .cell.nonfinite{fill:#cf222e}svg.plot .cell.hot{stroke:#cf222e;stroke-width:2}
svg.plot .cellvalue{font-size:10px;fill:#1f2328}svg.plot .cellvalue.light{fill:#fff}
)css";

std::string esc(const std::string& s) { return markup_escape(s); }

// Escaped, with a break opportunity after the separators of ids and specs
// ("qblock_vs_exact", "sage2:preset=P,accum=fp32"), so that a summary
// table of many rules wraps at them instead of overflowing the page or
// breaking a word anywhere.
std::string breakable(const std::string& s) {
  std::string o, part;
  for (char ch : s) {
    part += ch;
    if (ch == '_' || ch == ',' || ch == ':' || ch == '/' || ch == '=') {
      o += markup_escape(part) + "<wbr>";
      part.clear();
    }
  }
  return o + markup_escape(part);
}

std::string page_open(const std::string& title) {
  return "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
         "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>" +
         esc(title) + "</title>\n<style>" + kStyle + "</style>\n</head>\n<body>\n";
}

std::string page_close() {
  return std::string("<p class=\"note\">touchstone ") + TOUCHSTONE_VERSION + "</p>\n</body>\n</html>\n";
}

std::string verdict_class(Verdict v) {
  for (const auto& w : verdict_table())
    if (w.verdict == v) return w.key;
  return "other";
}

std::string badge(Verdict v) {
  return "<span class=\"badge " + verdict_class(v) + "\">" + esc(verdict_name(v)) + "</span>";
}

// The words of the terminal table, so every report says the same thing.
std::string status_text(const RuleOutcome& o) {
  switch (o.status) {
    case RuleStatus::pass: return "pass";
    case RuleStatus::fail: return "FAIL";
    case RuleStatus::inconclusive: return "open";
    case RuleStatus::missing: return o.optional ? "n/a" : "missing";
  }
  return rule_status_name(o.status);
}

std::string status_class(const RuleOutcome& o) {
  switch (o.status) {
    case RuleStatus::pass: return "pass";
    case RuleStatus::fail: return "fail";
    case RuleStatus::inconclusive: return "open";
    case RuleStatus::missing: return o.optional ? "na" : "missing";
  }
  return "na";
}

// The verdict engine keeps no figure for an undefined measurement (rel_l2
// against an all-zero reference); only its message tells it from a missing one.
std::string absent_text(const RuleOutcome& o) {
  return o.message.rfind("undefined", 0) == 0 ? "undefined" : "missing";
}

std::string figure_cell(const RuleOutcome& o) {
  if (!o.figure) return "<td class=\"num gapcell\">" + absent_text(o) + "</td>";
  std::string s = esc(format_number(*o.figure));
  if (o.interval)
    s += " [" + esc(format_number(o.interval->lower)) + ", " + esc(format_number(o.interval->upper)) + "] " +
         esc(format_number(o.interval->confidence * 100)) + "% CI";
  return std::string("<td class=\"num") + (std::isfinite(*o.figure) ? "" : " gapcell") + "\">" + s + "</td>";
}


std::string json_text(const nlohmann::json& j) {
  if (j.is_string()) return j.get<std::string>();
  if (j.is_number_float()) return format_number(j.get<double>());
  return j.dump();
}

// Scalars in a row each; objects and arrays folded, since an imported
// report's context can run to pages.
std::string context_rows(const nlohmann::json& ctx) {
  std::ostringstream o;
  if (!ctx.is_object()) return "";
  for (const auto& [k, v] : ctx.items()) {
    o << "<tr><th>" << esc(k) << "</th><td>";
    if (v.is_object() || v.is_array()) {
      if (v.empty()) o << "<span class=\"note\">none</span>";
      else o << "<details><summary>" << v.size() << (v.is_object() ? " entr" : " item")
             << (v.is_object() ? (v.size() == 1 ? "y" : "ies") : (v.size() == 1 ? "" : "s"))
             << "</summary><pre>" << esc(v.dump(2)) << "</pre></details>";
    } else {
      o << "<code>" << esc(json_text(v)) << "</code>";
    }
    o << "</td></tr>\n";
  }
  return o.str();
}

std::string rule_title(const GateRule& r) {
  return r.id + ": " + r.metric + (r.is_speed() ? "" : " vs " + r.against) + " " + r.bound_text();
}

std::vector<BoundLine> bound_lines(const GateRule& r) {
  std::vector<BoundLine> b;
  if (r.min) b.push_back({*r.min, "min " + format_number(*r.min)});
  if (r.max) b.push_back({*r.max, "max " + format_number(*r.max)});
  return b;
}

// A cosine near 1 is read as 1 - cos on a log axis: 0.9996 and a 0.999 bound
// are then a factor 2.5 apart instead of one pixel.
svg::Scale plot_scale(const std::string& metric) {
  return metric == "cosine" ? svg::Scale::one_minus : svg::Scale::automatic;
}

// The baseline's own figure of the rule's metric against exact: what an exact
// candidate would score against the baseline, and the least a candidate
// judged against exact can hope for relative to it. From a resolved ratio
// limit (k x the baseline's figure), else from the run's context.
std::optional<double> noise_floor(const GateRun& run, const std::vector<RuleOutcomes>& idx, const GateRule& r) {
  if (r.max_ratio_to_baseline && *r.max_ratio_to_baseline > 0)
    for (const auto& o : idx)
      if (const RuleOutcome* x = o.find(r.id); x && x->limit && std::isfinite(*x->limit))
        return *x->limit / *r.max_ratio_to_baseline;
  if (!r.tensor.empty() && r.tensor != run.gate.tensor) return std::nullopt;
  const auto& ctx = run.context;
  if (ctx.is_object() && ctx.contains("baseline_vs_exact") && ctx["baseline_vs_exact"].is_object()) {
    const auto& b = ctx["baseline_vs_exact"];
    if (b.contains(r.metric) && b[r.metric].is_number()) return b[r.metric].get<double>();
  }
  return std::nullopt;
}

// Outcomes are looked up through one index per candidate (idx[i] for
// run.candidates[i]), so many rules x candidates render in linear time.
std::string accuracy_plot(const GateRun& run, const std::vector<RuleOutcomes>& idx, const GateRule& r) {
  std::vector<Dot> rows;
  for (size_t i = 0; i < run.candidates.size(); ++i) {
    const auto& c = run.candidates[i];
    Dot d;
    d.label = c.candidate;
    if (const RuleOutcome* o = idx[i].find(r.id)) {
      d.value = o->figure;
      d.gap_text = absent_text(*o);
      d.row_bound = o->limit;
      d.css = status_class(*o);
    } else {
      d.gap_text = "missing";
      d.css = "missing";
    }
    rows.push_back(d);
  }
  svg::DotOptions opt;
  opt.scale = plot_scale(r.metric);
  opt.noise_floor = noise_floor(run, idx, r);
  std::string caption = "figure per candidate against the bound (dashed)";
  if (r.max_ratio_to_baseline)
    caption += "; the limit " + format_number(*r.max_ratio_to_baseline) +
               " x the baseline's figure vs exact is dashed on each candidate's row";
  if (opt.noise_floor)
    caption += "; grey: the noise floor, the baseline's own figure vs exact (" + format_number(*opt.noise_floor) + ")";
  return "<figure>\n<figcaption><strong>" + esc(rule_title(r)) + "</strong> <span class=\"note\">" + esc(caption) +
         "</span></figcaption>\n" + svg::dot_plot(rule_title(r), rows, bound_lines(r), opt) + "</figure>\n";
}

std::string speed_plot(const GateRun& run, const std::vector<RuleOutcomes>& idx, const GateRule& r) {
  std::vector<Dot> rows;
  bool any_interval = false;
  for (size_t i = 0; i < run.candidates.size(); ++i) {
    const auto& c = run.candidates[i];
    Dot d;
    d.label = c.candidate;
    if (const RuleOutcome* o = idx[i].find(r.id)) {
      d.value = o->figure;
      d.gap_text = absent_text(*o);
      d.css = status_class(*o);
      if (o->interval) {
        d.lower = o->interval->lower;
        d.upper = o->interval->upper;
        any_interval = true;
      }
    } else {
      d.gap_text = "missing";
      d.css = "missing";
    }
    rows.push_back(d);
  }
  const std::string caption =
      std::string("speedup (baseline time / candidate time) per candidate") +
      (any_interval ? "; whiskers: the " + format_number(r.confidence * 100) + "% interval" : "") +
      "; the bound is dashed";
  return "<figure>\n<figcaption><strong>" + esc(rule_title(r)) + "</strong> <span class=\"note\">" + esc(caption) +
         "</span></figcaption>\n" + svg::dot_plot(rule_title(r), rows, bound_lines(r)) + "</figure>\n";
}

std::string rules_table(const CandidateVerdict& c) {
  std::ostringstream o;
  o << "<table class=\"rules\">\n<tr><th>rule</th><th>metric</th><th>figure</th><th>bound</th><th>outcome</th>"
       "<th>reason</th></tr>\n";
  for (const auto& r : c.outcomes) {
    std::string metric = r.metric;
    if (!r.metric.empty() && r.metric != "speedup" && !r.against.empty()) metric += " vs " + r.against;
    if (!r.tensor.empty()) metric += " (" + r.tensor + ")";
    o << "<tr><td><code>" << esc(r.id) << "</code>" << (r.builtin ? " <span class=\"note\">built-in</span>" : "")
      << (r.optional ? " <span class=\"note\">optional</span>" : "") << "</td><td>" << esc(metric) << "</td>"
      << figure_cell(r) << "<td>" << esc(r.bound) << "</td><td class=\"" << status_class(r) << "\">"
      << esc(status_text(r)) << "</td><td>" << esc(rule_reason(c, r)) << "</td></tr>\n";
  }
  o << "</table>\n";
  return o.str();
}

// Only a few groups per breakdown travel in a gate run (the worst by
// rel_l2), not a series by index: they are listed, not plotted.
std::string worst_groups(const nlohmann::json& w) {
  if (!w.is_object()) return "";
  std::ostringstream o;
  o << "<h3>Worst groups vs the baseline by " << esc(w.value("metric", std::string("rel_l2"))) << "</h3>\n<table>\n";
  const std::pair<const char*, const char*> groups[] = {
      {"per_head", "heads"}, {"per_query_block", "query blocks (128 tokens)"}, {"per_frame", "latent frames"}};
  for (const auto& [key, title] : groups) {
    if (!w.contains(key) || !w[key].is_array()) continue;
    o << "<tr><th>" << title << "</th><td>";
    bool first = true;
    for (const auto& e : w[key]) {
      if (!e.is_object()) continue;
      o << (first ? "" : "; ") << esc(json_text(e.value("index", nlohmann::json()))) << ": ";
      const auto& v = e.contains("value") ? e["value"] : nlohmann::json();
      if (v.is_number()) o << esc(format_number(v.get<double>()));
      else o << "<span class=\"gapcell\">undefined</span>";
      first = false;
    }
    o << "</td></tr>\n";
  }
  o << "</table>\n<p class=\"note\">Every index is plotted by <code>touchstone compare F A B --html FILE</code>.</p>\n";
  return o.str();
}

std::string other_levels(const nlohmann::json& details) {
  if (!details.contains("speed") || !details["speed"].is_object()) return "";
  const auto& l = details["speed"].value("other_levels", nlohmann::json::array());
  if (!l.is_array() || l.empty()) return "";
  std::ostringstream o;
  o << "<h3>Other timing levels</h3>\n<table>\n<tr><th>level</th><th>quantity</th><th>candidate</th>"
       "<th>baseline</th><th>unit</th><th>speedup</th></tr>\n";
  auto num = [](const nlohmann::json& v) {
    return v.is_number() ? "<td class=\"num\">" + esc(format_number(v.get<double>())) + "</td>"
                         : std::string("<td class=\"num gapcell\">missing</td>");
  };
  for (const auto& e : l) {
    if (!e.is_object()) continue;
    o << "<tr><td>" << esc(json_text(e.value("level", nlohmann::json("")))) << "</td><td>"
      << esc(json_text(e.value("quantity", nlohmann::json("")))) << "</td>"
      << num(e.value("candidate", nlohmann::json())) << num(e.value("baseline", nlohmann::json())) << "<td>"
      << esc(json_text(e.value("unit", nlohmann::json("")))) << "</td>" << num(e.value("speedup", nlohmann::json()))
      << "</tr>\n";
  }
  o << "</table>\n";
  return o.str();
}

std::string breakdown_plot(const std::string& title, const std::string& x_label,
                           const std::vector<MetricSet>& groups, const std::vector<MetricSet>* floor,
                           const std::string& floor_name, bool gain) {
  svg::GroupPlot p;
  p.title = title;
  p.x_label = x_label;
  p.y_label = gain ? "|gain - 1|" : "rel_l2";
  auto figure = [gain](const MetricSet& m) -> std::optional<double> {
    if (!gain) return m.rel_l2;
    if (!m.gain) return std::nullopt;
    return std::fabs(*m.gain - 1);
  };
  std::string nan_at, undefined_at;
  for (size_t i = 0; i < groups.size(); ++i) {
    const auto v = figure(groups[i]);
    p.values.push_back(v);
    if (!v) undefined_at += (undefined_at.empty() ? "" : ", ") + std::to_string(i);
    else if (!std::isfinite(*v)) nan_at += (nan_at.empty() ? "" : ", ") + std::to_string(i);
  }
  if (floor && floor->size() == groups.size()) {
    for (const auto& m : *floor) p.floor.push_back(figure(m));
    p.floor_label = floor_name + " (noise floor)";
  }
  std::ostringstream o;
  o << "<figure>\n<figcaption><strong>" << esc(title) << "</strong> <span class=\"note\">" << groups.size()
    << " groups, each a point";
  if (!p.floor.empty()) o << "; grey ticks: " << esc(floor_name) << " against the same reference, the noise floor";
  if (!nan_at.empty()) o << "; not finite (NaN or inf), not drawn, marked x: " << esc(nan_at);
  if (!undefined_at.empty()) o << "; undefined (all-zero reference), not drawn, marked x: " << esc(undefined_at);
  o << "</span></figcaption>\n";
  if (groups.empty()) o << "<p class=\"note\">no groups</p>\n";
  else o << svg::group_plot(p);
  o << "</figure>\n";
  return o.str();
}

// A shown figure back as a number ("-" and words: none).
std::optional<double> shown_number(const CandidateVerdict& c, size_t k) {
  const std::string& t = shown_value(c, k);
  char* end = nullptr;
  const double v = std::strtod(t.c_str(), &end);
  if (end == t.c_str() || *end != '\0') return std::nullopt;
  return v;
}

std::optional<size_t> column(const GateRun& run, const std::string& prefix) {
  for (size_t k = 0; k < run.columns.size(); ++k)
    if (run.columns[k].rfind(prefix, 0) == 0) return k;
  return std::nullopt;
}

// A sweep's trade-off: each row's cost (routed density, or its time) against
// its distance to the baseline, the gate's bound on that distance drawn, and
// the Pareto front (rows no other row beats on both) joined. Runs without a
// density column (a gate) have none.
std::string pareto_section(const GateRun& run) {
  const auto dens = column(run, "density"), dist = column(run, "rel_l2 vs "), wall = column(run, "wall ms");
  if (!dens || !dist || run.candidates.empty()) return "";
  const auto tau = column(run, "tau");
  const std::string dist_name = run.columns[*dist] == "rel_l2 vs exact" ? "rel_l2 vs exact" : run.columns[*dist];
  std::vector<BoundLine> bounds;
  for (const auto& r : run.gate.rules)
    if (r.metric == "rel_l2" && r.against == "baseline" && r.max && r.tensor.empty())
      bounds.push_back({*r.max, r.id + " max " + format_number(*r.max)});
  std::ostringstream o;
  o << "<h2>Trade-off</h2>\n";
  auto one = [&](size_t ycol, const std::string& what) {
    svg::XYSeries rows{"rows", "s0", {}, false}, front{"Pareto front", "front", {}, true, false};
    struct P {
      double x, y;
    };
    std::vector<P> pts;
    for (const auto& c : run.candidates) {
      const auto x = shown_number(c, *dist), y = shown_number(c, ycol);
      if (!x || !y) continue;
      std::string label = tau ? shown_value(c, *tau) : c.candidate;
      if (tau && shown_number(c, *tau)) label = "\u03c4=" + label;
      const std::string css = c.verdict == Verdict::accept ? "pass" : c.verdict == Verdict::reject ? "fail" : "open";
      // Rows on one spot (two tau with the same routing) share a label.
      auto same = std::find_if(rows.points.begin(), rows.points.end(),
                               [&](const svg::XYPoint& p) { return p.x == *x && p.y == *y; });
      if (same != rows.points.end()) {
        same->label += ", " + label;
        continue;
      }
      rows.points.push_back({*x, *y, label, css});
      pts.push_back({*x, *y});
    }
    if (rows.points.empty()) return;
    for (const auto& p : pts) {
      bool dominated = false;
      for (const auto& q : pts)
        if (q.x <= p.x && q.y <= p.y && (q.x < p.x || q.y < p.y)) dominated = true;
      if (!dominated && std::isfinite(p.x) && std::isfinite(p.y)) front.points.push_back({p.x, p.y, "", ""});
    }
    svg::XYPlot plot;
    plot.title = what + " against " + dist_name;
    plot.x_label = dist_name;
    plot.y_label = what;
    plot.series = {front, rows};
    plot.series[1].name.clear();
    plot.x_bounds = bounds;
    o << "<figure>\n<figcaption><strong>" << esc(plot.title) << "</strong> <span class=\"note\">each row a point "
      << "(green ACCEPT, red REJECT, amber INCONCLUSIVE), labelled by its tau; the Pareto front (no other row is both "
      << "closer and cheaper) dashed"
      << (bounds.empty() ? "" : "; the gate's bound on " + esc(dist_name) + " red, dashed") << "</span></figcaption>\n"
      << svg::xy_plot(plot) << "</figure>\n";
  };
  one(*dens, "routed density");
  if (wall) one(*wall, "wall ms (one run, not judged)");
  return o.str();
}

std::string optional_cell(const std::optional<double>& v, int digits) {
  if (!v) return "<td class=\"num gapcell\">undefined</td>";
  return std::string("<td class=\"num") + (std::isfinite(*v) ? "" : " gapcell") + "\">" +
         esc(format_number(*v, digits)) + "</td>";
}

// One run's part of a page; `anchor` prefixes its candidates' ids, so that
// several runs share a page.
std::string run_section(const GateRun& run, const std::string& anchor) {
  std::vector<RuleOutcomes> idx;
  idx.reserve(run.candidates.size());
  for (const auto& c : run.candidates) idx.emplace_back(c);
  const VerdictCounts counts = count_verdicts(run.candidates);
  std::ostringstream o;
  o << "<h1>touchstone gate <code>" << esc(run.gate.name) << "</code>: " << counts.of(Verdict::accept) << " of " << run.candidates.size()
    << " accepted</h1>\n";
  if (!run.gate.description.empty()) o << "<p>" << esc(run.gate.description) << "</p>\n";
  o << "<table class=\"meta\">\n"
    << "<tr><th>gate</th><td><code>" << esc(run.gate.source) << "</code></td></tr>\n"
    << "<tr><th>baseline</th><td><code>" << esc(run.baseline) << "</code></td></tr>\n"
    << "<tr><th>tensor</th><td><code>" << esc(run.gate.tensor) << "</code></td></tr>\n"
    << "<tr><th>input</th><td><code>" << esc(run.input) << "</code> (" << esc(run.mode) << ")</td></tr>\n"
    << context_rows(run.context) << "</table>\n";

  o << "<h2>Summary</h2>\n<p>" << counts.text(false) << "; exit code " << run.exit_code() << "</p>\n";
  // Wider than the page (many rules, a narrow window): it scrolls in its own box, nothing is cut.
  o << "<div class=\"wide\"><table class=\"summary\">\n<tr><th>candidate</th>";
  for (const auto& col : run.columns) o << "<th>" << esc(col) << "</th>";
  // A rule's column is headed by its id, the metric and bound below it in
  // small type, so that a gate of eight rules wraps within the page.
  for (const auto& r : run.gate.rules)
    o << "<th title=\"" << esc(rule_title(r)) << "\">" << breakable(r.id) << "<br><span class=\"note\">"
      << breakable(r.metric + (r.is_speed() ? "" : " vs " + r.against) + " " + r.bound_text()) << "</span></th>";
  o << "<th>verdict</th></tr>\n";
  for (size_t i = 0; i < run.candidates.size(); ++i) {
    const auto& c = run.candidates[i];
    o << "<tr><td><a href=\"#" << anchor << i << "\"><code>" << breakable(c.candidate) << "</code></a></td>";
    for (size_t k = 0; k < run.columns.size(); ++k) o << "<td class=\"num\">" << esc(shown_value(c, k)) << "</td>";
    for (const auto& r : run.gate.rules) {
      const RuleOutcome* oc = idx[i].find(r.id);
      if (!oc) {
        o << "<td class=\"na\">-</td>";
        continue;
      }
      // An absent figure already says "missing"; the status adds only what differs (n/a).
      o << "<td class=\"" << status_class(*oc) << "\">";
      if (oc->figure) o << esc(format_number(*oc->figure)) << " " << esc(status_text(*oc));
      else {
        o << "<span class=\"gapcell\">" << absent_text(*oc) << "</span>";
        if (status_text(*oc) != "missing") o << " " << esc(status_text(*oc));
      }
      o << "</td>";
    }
    o << "<td>" << badge(c.verdict) << "</td></tr>\n";
  }
  o << "</table></div>\n";

  o << pareto_section(run);
  if (!run.candidates.empty()) {
    o << "<h2>Figures against bounds</h2>\n";
    for (const auto& r : run.gate.rules) o << (r.is_speed() ? speed_plot(run, idx, r) : accuracy_plot(run, idx, r));
  }

  for (size_t i = 0; i < run.candidates.size(); ++i) {
    const auto& c = run.candidates[i];
    o << "<h2 id=\"" << anchor << i << "\">" << badge(c.verdict) << " <code>" << esc(c.candidate) << "</code></h2>\n";
    if (!c.error.empty()) o << "<p class=\"error\">candidate failed: " << esc(c.error) << "</p>\n";
    o << rules_table(c);
    if (!c.notes.empty()) {
      o << "<ul class=\"notes\">\n";
      for (const auto& n : c.notes) o << "<li>" << esc(n) << "</li>\n";
      o << "</ul>\n";
    }
    o << other_levels(c.details);
    if (c.details.contains("worst_vs_baseline")) o << worst_groups(c.details["worst_vs_baseline"]);
    if (!c.repro.empty()) o << "<p>repro:</p>\n<pre><code>" << esc(c.repro) << "</code></pre>\n";
  }
  return o.str();
}

}  // namespace

std::string render_page(const std::string& title, const std::string& body_html) {
  return page_open(title) + body_html + page_close();
}

std::string render_html(const GateRun& run) {
  return page_open("touchstone gate " + run.gate.name) + run_section(run, "candidate-") + page_close();
}

std::string render_html(const std::vector<const GateRun*>& runs, const std::string& title,
                        const std::vector<std::string>& notes) {
  std::ostringstream o;
  o << page_open(title) << "<h1>" << esc(title) << "</h1>\n";
  if (!notes.empty()) {
    o << "<ul class=\"notes\">\n";
    for (const auto& n : notes) o << "<li>" << esc(n) << "</li>\n";
    o << "</ul>\n";
  }
  for (size_t k = 0; k < runs.size(); ++k)
    o << run_section(*runs[k], "run" + std::to_string(k) + "-candidate-");
  o << page_close();
  return o.str();
}

std::string render_compare_html(const CompareReport& r) {
  std::ostringstream o;
  o << page_open("touchstone compare " + r.a_name + " vs " + r.b_name);
  o << "<h1>touchstone compare <code>" << esc(r.a_name) << "</code> vs <code>" << esc(r.b_name) << "</code></h1>\n";
  o << "<table class=\"meta\">\n"
    << "<tr><th>fixture</th><td><code>" << esc(r.fixture) << "</code></td></tr>\n"
    << "<tr><th>candidate (A)</th><td><code>" << esc(r.a_dataset) << "</code> (" << esc(r.a_dtype) << ")</td></tr>\n"
    << "<tr><th>reference (B)</th><td><code>" << esc(r.b_dataset) << "</code> (" << esc(r.b_dtype)
    << ")</td></tr>\n"
    << "<tr><th>shape</th><td><code>" << esc(r.shape) << "</code></td></tr>\n</table>\n";

  // Six digits, as the terminal output of touchstone compare prints them.
  o << "<h2>Metrics</h2>\n<table class=\"metrics\">\n<tr><th>metric</th><th>value</th></tr>\n";
  const auto mm = metric_map(r.metrics);
  for (const auto& name : metric_names())
    o << "<tr><td><code>" << esc(name) << "</code></td>" << optional_cell(mm.at(name), 6) << "</tr>\n";
  o << "</table>\n";
  if (r.metrics.nonfinite)
    o << "<p class=\"error\">the candidate holds " << r.metrics.nonfinite << " non-finite values</p>\n";
  if (r.metrics.nonfinite_ref)
    o << "<p class=\"error\">the reference holds " << r.metrics.nonfinite_ref << " non-finite values</p>\n";

  if (r.breakdown) {
    const MetricBreakdown& b = *r.breakdown;
    o << "<h2>Breakdown</h2>\n";
    if (b.cond) o << "<p>conditioning tokens: rel_l2 " << esc(b.cond->rel_l2 ? format_number(*b.cond->rel_l2, 6) : "undefined")
                  << "</p>\n";
    const MetricBreakdown* f = r.floor ? &*r.floor : nullptr;
    const std::string& fn = r.floor_name;
    o << breakdown_plot("rel_l2 per head", "head", b.per_head, f ? &f->per_head : nullptr, fn, false);
    o << breakdown_plot("rel_l2 per 128-token query block", "query block (128 tokens)", b.per_query_block,
                        f ? &f->per_query_block : nullptr, fn, false);
    o << breakdown_plot("rel_l2 per latent frame", "latent frame", b.per_frame, f ? &f->per_frame : nullptr, fn,
                        false);
    o << breakdown_plot("|gain - 1| per head (a scaled head stands out)", "head", b.per_head,
                        f ? &f->per_head : nullptr, fn, true);
    if (!f)
      o << "<p class=\"note\">No noise floor drawn: <code>--noise-floor NAME</code> compares a third tensor (the "
           "baseline) with the same reference, group by group.</p>\n";
  } else if (!r.breakdown_note.empty()) {
    o << "<p class=\"note\">" << esc(r.breakdown_note) << "</p>\n";
  }
  o << page_close();
  return o.str();
}

}  // namespace ts
