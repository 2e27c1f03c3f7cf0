// The terminal and HTML writers of touchstone scan (drivers/scan.cpp runs the search; scan_json.cpp
// writes its JSON).
#include "report/scan_report.hpp"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <sstream>

#include "gates/gate_file.hpp"
#include "report/markup.hpp"
#include "report/page.hpp"
#include "report/svg_plot.hpp"

namespace ts {

std::string scan_text(const ScanResult& r) {
  std::ostringstream o;
  const std::string dim = scan_dim_name(r.options.dim), fig = scan_figure_name(r.options.metric);
  o << "scan of " << r.candidate_name << " against " << r.options.exact << ", " << fig << " by " << dim << " ("
    << r.options.preset << " geometry)\n";
  o << "  " << dim << std::string(dim.size() < 10 ? 10 - dim.size() : 1, ' ') << fig
    << std::string(fig.size() < 14 ? 14 - fig.size() : 1, ' ') << "ms        evaluation\n";
  for (const auto& e : r.search.sorted()) {
    std::string f = !e.error.empty() ? "failed" : e.figure ? format_number(*e.figure) : "undefined";
    char line[256];
    std::snprintf(line, sizeof line, "  %-10lld%-14s%-10.1f%s", static_cast<long long>(e.x), f.c_str(), e.ms,
                  (std::to_string(e.order + 1) + (e.grid ? " (grid)" : " (bisection)")).c_str());
    // The row fits 100 columns; the whole error is in --json.
    std::string err = e.error;
    const size_t room = 100 > std::strlen(line) + 2 ? 100 - std::strlen(line) - 2 : 0;
    if (err.size() > room) err = room > 3 ? err.substr(0, room - 3) + "..." : "";
    o << line << (err.empty() ? "" : "  " + err) << "\n";
  }
  bool any_finite = false;
  for (const auto& e : r.search.evaluations) any_finite = any_finite || (e.figure && std::isfinite(*e.figure));
  if (r.search.slope)
    o << "trend: " << fig << " ~ " << dim << "^" << format_number(*r.search.slope, 3) << "; "
      << r.search.evaluations.size() << " evaluations\n";
  else
    o << "trend: none (no two neighbouring runs gave a finite figure); " << r.search.evaluations.size()
      << " evaluations\n";
  if (r.search.cliff) o << r.search.cliff->text << "\n";
  else if (!any_finite) o << "nothing measured: every run failed or gave no finite figure (errors above)\n";
  else if (!r.search.slope) o << "no cliff located: too few finite runs to have a trend\n";
  else o << "no cliff: every step follows the trend within a factor " << format_number(r.options.search.jump) << "\n";
  for (const auto& [a, b] : r.search.other_departures)
    o << "also off the trend (not bisected): between " << a << " and " << b << "\n";
  return o.str();
}

std::string scan_html(const ScanResult& r) {
  const std::string dim = scan_dim_name(r.options.dim), fig = scan_figure_name(r.options.metric);
  svg::XYPlot p;
  p.title = fig + " against " + dim + ": " + r.candidate_name;
  p.x_label = dim;
  p.y_label = fig + " vs " + r.options.exact;
  svg::XYSeries s{fig, "s0", {}, true};
  for (const auto& e : r.search.evaluations)
    s.points.push_back({static_cast<double>(e.x), e.figure, "", e.grid ? "s0" : "s1"});
  p.series = {s};
  if (r.search.cliff)
    p.x_spans.push_back({static_cast<double>(r.search.cliff->below), static_cast<double>(r.search.cliff->above),
                         "cliff " + std::to_string(r.search.cliff->below) + "-" + std::to_string(r.search.cliff->above)});
  std::ostringstream b;
  b << "<h1>touchstone scan: <code>" << markup_escape(r.candidate_name) << "</code></h1>\n<p>"
    << markup_escape(r.search.cliff ? r.search.cliff->text
                     : r.search.slope ? "no cliff: every step follows the trend"
                                    : "no trend: no two neighbouring runs gave a finite figure") << "</p>\n"
    << "<figure><figcaption><span class=\"note\">blue: the first grid; purple: bisection steps; x on the axis: a "
       "failed or non-finite run; shaded: where the cliff lies</span></figcaption>\n"
    << svg::xy_plot(p) << "</figure>\n<table>\n<tr><th>" << markup_escape(dim) << "</th><th>"
    << markup_escape(fig) << "</th><th>ms</th><th>evaluation</th><th>error</th></tr>\n";
  for (const auto& e : r.search.sorted())
    b << "<tr><td class=\"num\">" << e.x << "</td><td class=\"num\">"
      << markup_escape(!e.error.empty() ? "failed" : e.figure ? format_number(*e.figure) : "undefined")
      << "</td><td class=\"num\">" << format_number(e.ms) << "</td><td>"
      << e.order + 1 << (e.grid ? " (grid)" : " (bisection)") << "</td><td>"
      << markup_escape(e.error) << "</td></tr>\n";
  b << "</table>\n<pre>" << markup_escape(scan_text(r)) << "</pre>\n";
  return render_page("touchstone scan " + r.candidate_name, b.str());
}

}  // namespace ts
