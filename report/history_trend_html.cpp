// The trend page of `touchstone history --html`: one inline SVG per series. Its own axis (not
// report/svg_plot.hpp's Axis, which always spans 0 or whole 1-2-5 steps on a log scale): a trend
// is read for changes of a few percent, so the value axis is zoomed to the figures.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "gates/gate_file.hpp"
#include "report/markup.hpp"
#include "report/history_report.hpp"

namespace ts::history {
namespace {

constexpr double kW = 760, kH = 270, kLeft = 78, kRight = 24, kTop = 34, kBottom = 58;

std::string c(double v) {
  if (!std::isfinite(v)) return "0";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

struct ValueAxis {
  double lo = 0, hi = 1, step = 0.2;
  static ValueAxis fit(double mn, double mx) {
    ValueAxis a;
    double span = mx - mn;
    if (!(span > 0)) span = std::max(std::fabs(mx) * 0.02, 1e-12);
    mn -= span * 0.12;
    mx += span * 0.12;
    const double raw = (mx - mn) / 5;
    const double mag = std::pow(10.0, std::floor(std::log10(raw)));
    a.step = mag;
    for (double m : {1.0, 2.0, 5.0, 10.0})
      if (m * mag >= raw) {
        a.step = m * mag;
        break;
      }
    a.lo = std::floor(mn / a.step) * a.step;
    a.hi = std::ceil(mx / a.step) * a.step;
    return a;
  }
  bool inside(double v) const { return v >= lo && v <= hi; }
  double y(double v) const {
    const double f = std::clamp((v - lo) / (hi - lo), 0.0, 1.0);
    return kH - kBottom - f * (kH - kTop - kBottom);
  }
};

std::string verdict_class(const std::string& v) {
  if (v == "ACCEPT") return "accept";
  if (v == "REJECT") return "reject";
  return "inconclusive";
}

std::string pct(const std::optional<double>& r) {
  if (!r) return "from 0";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%+.2f%%", 100 * *r);
  return buf;
}

std::string plot(const Series& s) {
  const size_t n = s.points.size();
  const double x0 = kLeft, x1 = kW - kRight, ybot = kH - kBottom;
  auto X = [&](double i) { return x0 + (i + 0.5) / static_cast<double>(std::max<size_t>(n, 1)) * (x1 - x0); };
  double mn = INFINITY, mx = -INFINITY;
  for (const auto& p : s.points) {
    mn = std::min(mn, *p.figure);
    mx = std::max(mx, *p.figure);
  }
  // Bounds of the latest record: a rule's min and max, or its resolved limit (k x baseline).
  std::vector<std::pair<double, std::string>> bounds;
  if (n) {
    const StoredFigure& last = s.points.back();
    if (last.bound_max) bounds.push_back({*last.bound_max, "max " + format_number(*last.bound_max)});
    if (last.bound_min) bounds.push_back({*last.bound_min, "min " + format_number(*last.bound_min)});
    if (!last.bound_max && !last.bound_min && last.limit) bounds.push_back({*last.limit, "limit " + format_number(*last.limit)});
  }
  // A bound near the figures joins the axis; a far one would flatten a 3 % step to a pixel, so
  // it is drawn at the edge it lies beyond, labelled.
  const double span0 = std::max(mx - mn, std::fabs(mx) * 0.02);
  for (const auto& b : bounds)
    if (std::fabs(b.first - (b.first > mx ? mx : mn)) <= 2 * span0) {
      mn = std::min(mn, b.first);
      mx = std::max(mx, b.first);
    }
  const ValueAxis ax = ValueAxis::fit(mn, mx);

  std::ostringstream o;
  const std::string title = s.candidate + " | " + s.metric_label() + " | gate " + s.gate + " | " + s.fixture_label();
  o << "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"trend\" viewBox=\"0 0 " << c(kW) << " " << c(kH)
    << "\" width=\"" << c(kW) << "\" height=\"" << c(kH) << "\" role=\"img\" aria-label=\"" << markup_escape(title)
    << "\"><title>" << markup_escape(title) << "</title>\n";
  o << "<text class=\"ptitle\" x=\"" << c(x0) << "\" y=\"18\">" << markup_escape(s.metric_label())
    << (n ? " (" + markup_escape(s.points.back().bound) + ")" : "") << "</text>\n";
  for (double v = ax.lo; v <= ax.hi + ax.step * 1e-6; v += ax.step) {
    const double y = ax.y(v), shown = std::fabs(v) < ax.step * 1e-9 ? 0.0 : v;
    o << "<line class=\"grid\" x1=\"" << c(x0) << "\" y1=\"" << c(y) << "\" x2=\"" << c(x1) << "\" y2=\"" << c(y)
      << "\"/><text class=\"tick\" x=\"" << c(x0 - 6) << "\" y=\"" << c(y + 4) << "\" text-anchor=\"end\">"
      << markup_escape(format_number(shown, 5)) << "</text>\n";
  }
  o << "<line class=\"axis\" x1=\"" << c(x0) << "\" y1=\"" << c(ybot) << "\" x2=\"" << c(x1) << "\" y2=\"" << c(ybot)
    << "\"/><line class=\"axis\" x1=\"" << c(x0) << "\" y1=\"" << c(kTop) << "\" x2=\"" << c(x0) << "\" y2=\"" << c(ybot)
    << "\"/>\n";
  // Commits under the axis: about ten labels whatever the length.
  const size_t every = std::max<size_t>(1, (n + 9) / 10);
  for (size_t i = 0; i < n; i += every) {
    o << "<text class=\"tick\" x=\"" << c(X(static_cast<double>(i))) << "\" y=\"" << c(ybot + 16)
      << "\" text-anchor=\"middle\">";
    if (s.points[i].commit.empty()) o << "#" << i + 1;
    else o << markup_escape(s.points[i].commit.size() > 8 ? s.points[i].commit.substr(0, 8) : s.points[i].commit);
    o << "</text>";
  }
  o << "<text class=\"note\" x=\"" << c((x0 + x1) / 2) << "\" y=\"" << c(ybot + 36)
    << "\" text-anchor=\"middle\">record order (commit)</text>\n";
  for (const auto& [value, label] : bounds) {
    const double y = ax.y(value);
    // Off the axis, a line at the edge would read as a bound at the edge's value: only the label.
    if (ax.inside(value))
      o << "<line class=\"bound\" x1=\"" << c(x0) << "\" y1=\"" << c(y) << "\" x2=\"" << c(x1) << "\" y2=\""
        << c(y) << "\"><title>bound " << markup_escape(label) << "</title></line>";
    o << "<text class=\"boundlabel\" x=\"" << c(x1 - 2) << "\" y=\"" << c(y + (value > ax.hi ? 12 : -4))
      << "\" text-anchor=\"end\">" << (ax.inside(value) ? "" : value > ax.hi ? "&#9650; " : "&#9660; ") << "bound "
      << markup_escape(label) << (ax.inside(value) ? "" : value > ax.hi ? " (above the plot)" : " (below the plot)")
      << "</text>\n";
  }
  for (const Segment& g : s.detection.segments)
    o << "<line class=\"level\" x1=\"" << c(X(static_cast<double>(g.begin) - 0.5)) << "\" y1=\"" << c(ax.y(g.level))
      << "\" x2=\"" << c(X(static_cast<double>(g.end) - 0.5)) << "\" y2=\"" << c(ax.y(g.level)) << "\"><title>level "
      << markup_escape(format_number(g.level, 6)) << "</title></line>\n";
  for (const Change& ch : s.detection.changes) {
    const double x = X(static_cast<double>(ch.index) - 0.5);
    o << "<line class=\"change " << (ch.regression ? "regression" : "improvement") << "\" x1=\"" << c(x) << "\" y1=\""
      << c(kTop) << "\" x2=\"" << c(x) << "\" y2=\"" << c(ybot) << "\"/><text class=\"changelabel\" x=\"" << c(x + 3)
      << "\" y=\"" << c(kTop + 10) << "\">" << markup_escape(pct(ch.relative)) << "</text>\n";
  }
  for (size_t i = 0; i < n; ++i) {
    const StoredFigure& p = s.points[i];
    const double x = X(static_cast<double>(i));
    if (p.lower && p.upper && std::isfinite(*p.lower) && std::isfinite(*p.upper))
      o << "<line class=\"whisker\" x1=\"" << c(x) << "\" y1=\"" << c(ax.y(*p.lower)) << "\" x2=\"" << c(x)
        << "\" y2=\"" << c(ax.y(*p.upper)) << "\"/>";
    o << "<circle class=\"pt " << verdict_class(p.verdict) << "\" cx=\"" << c(x) << "\" cy=\"" << c(ax.y(*p.figure))
      << "\" r=\"4\"><title>#" << i + 1 << " " << markup_escape(p.commit.empty() ? std::string("-") : p.commit) << " "
      << markup_escape(p.recorded_at) << ": " << format_number(*p.figure, 6) << " " << markup_escape(p.status) << ", "
      << markup_escape(p.verdict) << "</title></circle>\n";
  }
  o << "</svg>\n";
  return o.str();
}

const char* const kStyle = R"css(
body { font-family: system-ui, sans-serif; margin: 1.5em; color: #222; background: #fff; }
h1 { font-size: 1.3em; } h2 { font-size: 1.05em; margin: 1.6em 0 0.3em; word-break: break-all; }
p.meta, p.changes { margin: 0.2em 0; font-size: 0.9em; color: #444; }
svg.trend { display: block; max-width: 100%; height: auto; }
.grid { stroke: #e4e4e4; stroke-width: 1; } .axis { stroke: #555; stroke-width: 1; }
.tick, .note { font-size: 11px; fill: #555; } .ptitle { font-size: 13px; fill: #222; font-weight: 600; }
.bound { stroke: #c62828; stroke-width: 1.5; stroke-dasharray: 6 4; } .boundlabel { font-size: 11px; fill: #c62828; }
.level { stroke: #1565c0; stroke-width: 2; opacity: 0.55; }
.change { stroke-width: 1.5; stroke-dasharray: 3 3; } .change.regression { stroke: #c62828; } .change.improvement { stroke: #2e7d32; }
.changelabel { font-size: 11px; fill: #333; }
.whisker { stroke: #888; stroke-width: 1; }
.pt, .key { stroke: #222; stroke-width: 0.6; }
.accept { fill: #2e7d32; } .reject { fill: #c62828; } .inconclusive { fill: #f9a825; }
span.legend { margin-right: 1.2em; font-size: 0.9em; }
)css";

}  // namespace

std::string trend_html(const HistoryView& v) {
  std::ostringstream o;
  size_t points = 0;
  for (const auto& s : v.series) points += s.points.size();
  o << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>touchstone history: "
    << markup_escape(v.store) << "</title><style>" << kStyle << "</style></head><body>\n";
  o << "<h1>touchstone history: " << markup_escape(v.store) << "</h1>\n<p class=\"meta\">" << v.series.size()
    << " series, " << points << " recorded figures. Points coloured by the case's verdict: "
    << "<svg width=\"12\" height=\"12\"><circle class=\"key accept\" cx=\"6\" cy=\"6\" r=\"4\"/></svg> ACCEPT "
    << "<svg width=\"12\" height=\"12\"><circle class=\"key reject\" cx=\"6\" cy=\"6\" r=\"4\"/></svg> REJECT "
    << "<svg width=\"12\" height=\"12\"><circle class=\"key inconclusive\" cx=\"6\" cy=\"6\" r=\"4\"/></svg> "
       "INCONCLUSIVE; dashed red: the bound; blue: the levels found; dotted: a detected change (docs/history.md).</p>\n";
  if (v.series.empty()) o << "<p>Nothing recorded matches the filters.</p>\n";
  for (const Series& s : v.series) {
    o << "<section class=\"series\"><h2>" << markup_escape(s.candidate) << " &middot; gate "
      << markup_escape(s.gate) << " &middot; " << markup_escape(s.metric_label()) << "</h2>\n<p class=\"meta\">fixture "
      << markup_escape(s.fixture_label()) << (s.fixture_identity ? "" : " (no identity recorded)") << "; "
      << s.points.size() << " figure(s)" << (s.missing ? ", " + std::to_string(s.missing) + " without a finite figure" : "")
      << (s.detection.deterministic && s.detection.scatter == 0 ? "; deterministic: compared exactly" : "") << "</p>\n";
    o << plot(s);
    for (const Change& ch : s.detection.changes) {
      const StoredFigure& p = s.points[ch.index];
      o << "<p class=\"changes\">" << (ch.regression ? "Regression" : "Improvement") << " at #" << ch.index + 1
        << " (commit " << markup_escape(p.commit.empty() ? "-" : p.commit) << "): "
        << markup_escape(format_number(ch.before, 6) + " -> " + format_number(ch.after, 6) + " (" + pct(ch.relative) + ")")
        << "</p>\n";
    }
    o << "</section>\n";
  }
  o << "</body></html>\n";
  return o.str();
}

}  // namespace ts::history
