#include <algorithm>
#include <cmath>
#include <sstream>

#include "gates/markup.hpp"
#include "gates/report.hpp"
#include "gates/svg_plot.hpp"

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
)css";

std::string esc(const std::string& s) { return markup_escape(s); }

std::string page_open(const std::string& title) {
  return "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
         "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>" +
         esc(title) + "</title>\n<style>" + kStyle + "</style>\n</head>\n<body>\n";
}

std::string page_close() {
  return std::string("<p class=\"note\">touchstone ") + TOUCHSTONE_VERSION + "</p>\n</body>\n</html>\n";
}

std::string verdict_class(Verdict v) {
  switch (v) {
    case Verdict::accept: return "accept";
    case Verdict::reject: return "reject";
    case Verdict::inconclusive: return "inconclusive";
    case Verdict::mistrusted: return "mistrusted";
  }
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
  std::string caption = "figure per candidate against the bound (dashed)";
  if (r.max_ratio_to_baseline)
    caption += "; the limit " + format_number(*r.max_ratio_to_baseline) +
               " x the baseline's figure vs exact is dashed on each candidate's row";
  return "<figure>\n<figcaption><strong>" + esc(rule_title(r)) + "</strong> <span class=\"note\">" + esc(caption) +
         "</span></figcaption>\n" + svg::dot_plot(rule_title(r), rows, bound_lines(r)) + "</figure>\n";
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
      (any_interval ? "; whiskers: the " + format_number(r.confidence * 100) + "% bootstrap interval" : "") +
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
      << esc(status_text(r)) << "</td><td>" << esc(r.message) << "</td></tr>\n";
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
                           const std::vector<MetricSet>& groups) {
  std::vector<std::optional<double>> y;
  std::string nan_at, undefined_at;
  for (size_t i = 0; i < groups.size(); ++i) {
    y.push_back(groups[i].rel_l2);
    if (!groups[i].rel_l2) undefined_at += (undefined_at.empty() ? "" : ", ") + std::to_string(i);
    else if (!std::isfinite(*groups[i].rel_l2)) nan_at += (nan_at.empty() ? "" : ", ") + std::to_string(i);
  }
  std::ostringstream o;
  o << "<figure>\n<figcaption><strong>" << esc(title) << "</strong> <span class=\"note\">" << groups.size()
    << " groups";
  if (!nan_at.empty()) o << "; not finite (NaN or inf), not drawn, marked x: " << esc(nan_at);
  if (!undefined_at.empty()) o << "; undefined (all-zero reference), not drawn, marked x: " << esc(undefined_at);
  o << "</span></figcaption>\n";
  if (groups.empty()) o << "<p class=\"note\">no groups</p>\n";
  else o << svg::line_plot(title, x_label, "rel_l2", y);
  o << "</figure>\n";
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
  int acc = 0, rej = 0, inc = 0;
  for (const auto& c : run.candidates)
    (c.verdict == Verdict::accept ? acc : c.verdict == Verdict::reject ? rej : inc)++;
  std::ostringstream o;
  o << "<h1>touchstone gate <code>" << esc(run.gate.name) << "</code>: " << acc << " of " << run.candidates.size()
    << " accepted</h1>\n";
  if (!run.gate.description.empty()) o << "<p>" << esc(run.gate.description) << "</p>\n";
  o << "<table class=\"meta\">\n"
    << "<tr><th>gate</th><td><code>" << esc(run.gate.source) << "</code></td></tr>\n"
    << "<tr><th>baseline</th><td><code>" << esc(run.baseline) << "</code></td></tr>\n"
    << "<tr><th>tensor</th><td><code>" << esc(run.gate.tensor) << "</code></td></tr>\n"
    << "<tr><th>input</th><td><code>" << esc(run.input) << "</code> (" << esc(run.mode) << ")</td></tr>\n"
    << context_rows(run.context) << "</table>\n";

  o << "<h2>Summary</h2>\n<p>" << acc << " accepted, " << rej << " rejected, " << inc
    << " inconclusive; exit code " << run.exit_code() << "</p>\n";
  o << "<table class=\"summary\">\n<tr><th>candidate</th>";
  for (const auto& col : run.columns) o << "<th>" << esc(col) << "</th>";
  for (const auto& r : run.gate.rules) o << "<th>" << esc(rule_title(r)) << "</th>";
  o << "<th>verdict</th></tr>\n";
  for (size_t i = 0; i < run.candidates.size(); ++i) {
    const auto& c = run.candidates[i];
    o << "<tr><td><a href=\"#" << anchor << i << "\"><code>" << esc(c.candidate) << "</code></a></td>";
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
  o << "</table>\n";

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
    o << breakdown_plot("rel_l2 per head", "head", b.per_head);
    o << breakdown_plot("rel_l2 per 128-token query block", "query block (128 tokens)", b.per_query_block);
    o << breakdown_plot("rel_l2 per latent frame", "latent frame", b.per_frame);
  } else if (!r.breakdown_note.empty()) {
    o << "<p class=\"note\">" << esc(r.breakdown_note) << "</p>\n";
  }
  o << page_close();
  return o.str();
}

}  // namespace ts
