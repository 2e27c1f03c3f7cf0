// The trend page of `touchstone history --html`: one inline SVG per series. Its own axis (not
// report/svg_plot.hpp's Axis, which always spans 0 or whole 1-2-5 steps on a log scale): a trend
// is read for changes of a few percent, so the value axis is zoomed to the figures.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "gates/gate_file.hpp"
#include "report/markup.hpp"
#include "report/history_report.hpp"

namespace ts::history {
namespace {

// kTop leaves two lanes above the plot for the changes' labels (kLaneY), clear of the title
// and of every bound label, which lies inside the plot.
constexpr double kW = 760, kH = 290, kLeft = 78, kRight = 24, kTop = 54, kBottom = 58;
constexpr double kLaneY[] = {kTop - 8, kTop - 21};
// An 11px label's width, estimated (the page cannot measure it): wide enough for digits and signs.
double label_width(const std::string& text) { return 6.4 * static_cast<double>(text.size()) + 6; }

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

std::string pct(const std::optional<double>& r) { return change_percent(r); }

// A commit as the text names it (a prefix unique in the store), the whole one in its tooltip.
std::string short_commit(const HistoryView& v, const std::string& commit) {
  return commit.empty() ? "-" : v.short_commits(commit);
}

std::string change_class(const HistoryView& v, const Change& ch) {
  return !ch.worse ? "improvement" : counts_as_regression(ch, v.min_change) ? "regression" : "worse";
}

std::string plot(const HistoryView& v, const Series& s) {
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
  // A zoomed axis steps in the 6th digit or beyond: ticks get the digits that tell them apart.
  int tick_digits = 5;
  while (tick_digits < 15 && format_number(ax.lo, tick_digits) == format_number(ax.lo + ax.step, tick_digits)) ++tick_digits;
  for (double v = ax.lo; v <= ax.hi + ax.step * 1e-6; v += ax.step) {
    const double y = ax.y(v), shown = std::fabs(v) < ax.step * 1e-9 ? 0.0 : v;
    o << "<line class=\"grid\" x1=\"" << c(x0) << "\" y1=\"" << c(y) << "\" x2=\"" << c(x1) << "\" y2=\"" << c(y)
      << "\"/><text class=\"tick\" x=\"" << c(x0 - 6) << "\" y=\"" << c(y + 4) << "\" text-anchor=\"end\">"
      << markup_escape(format_number(shown, tick_digits)) << "</text>\n";
  }
  o << "<line class=\"axis\" x1=\"" << c(x0) << "\" y1=\"" << c(ybot) << "\" x2=\"" << c(x1) << "\" y2=\"" << c(ybot)
    << "\"/><line class=\"axis\" x1=\"" << c(x0) << "\" y1=\"" << c(kTop) << "\" x2=\"" << c(x0) << "\" y2=\"" << c(ybot)
    << "\"/>\n";
  // Commits under the axis, short as in the text, as many as fit side by side (at most ten).
  size_t longest = 1;
  for (const auto& p : s.points) longest = std::max(longest, short_commit(v, p.commit).size());
  const size_t fit = std::max<size_t>(1, static_cast<size_t>((x1 - x0) / (label_width(std::string(longest, '0')) + 4)));
  const size_t every = std::max<size_t>(1, (n + std::min<size_t>(fit, 10) - 1) / std::min<size_t>(fit, 10));
  for (size_t i = 0; i < n; i += every) {
    o << "<text class=\"tick\" x=\"" << c(X(static_cast<double>(i))) << "\" y=\"" << c(ybot + 16)
      << "\" text-anchor=\"middle\">";
    if (s.points[i].commit.empty()) o << "#" << i + 1;
    else o << "<title>" << markup_escape(s.points[i].commit) << "</title>" << markup_escape(short_commit(v, s.points[i].commit));
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
    // Inside the plot: under the line where above it would reach the changes' lanes.
    const bool under = value > ax.hi || y - 4 - 11 < kTop;
    o << "<text class=\"boundlabel\" x=\"" << c(x1 - 2) << "\" y=\"" << c(y + (under ? 12 : -4))
      << "\" text-anchor=\"end\">" << (ax.inside(value) ? "" : value > ax.hi ? "&#9650; " : "&#9660; ") << "bound "
      << markup_escape(label) << (ax.inside(value) ? "" : value > ax.hi ? " (above the plot)" : " (below the plot)")
      << "</text>\n";
  }
  for (const Segment& g : s.detection.segments)
    o << "<line class=\"level\" x1=\"" << c(X(static_cast<double>(g.begin) - 0.5)) << "\" y1=\"" << c(ax.y(g.level))
      << "\" x2=\"" << c(X(static_cast<double>(g.end) - 0.5)) << "\" y2=\"" << c(ax.y(g.level)) << "\"><title>level "
      << markup_escape(format_number(g.level, 6)) << "</title></line>\n";
  // Each change's label in a lane above the plot, centred on its line (kept within the plot's
  // width), in the first lane where it clears the label before it.
  double lane_end[2] = {-INFINITY, -INFINITY};
  for (const Change& ch : s.detection.changes) {
    const double x = X(static_cast<double>(ch.index) - 0.5);
    const std::string label = pct(ch.relative);
    const double w = label_width(label), left = std::clamp(x - w / 2, x0, x1 - w);
    const size_t lane = left >= lane_end[0] + 4 ? 0 : left >= lane_end[1] + 4 ? 1 : lane_end[0] <= lane_end[1] ? 0 : 1;
    lane_end[lane] = left + w;
    o << "<line class=\"change " << change_class(v, ch) << "\" x1=\"" << c(x) << "\" y1=\"" << c(kTop) << "\" x2=\""
      << c(x) << "\" y2=\"" << c(ybot) << "\"/><text class=\"changelabel\" x=\"" << c(left + w / 2) << "\" y=\""
      << c(kLaneY[lane]) << "\" text-anchor=\"middle\">" << markup_escape(label) << "</text>\n";
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
.change.worse { stroke: #ef6c00; }
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
       "INCONCLUSIVE; dashed red: the bound; blue: the levels found; dotted: a detected change, red a "
       "regression, orange worse but under --min-change "
    << change_percent(v.min_change).substr(1) << ", green an improvement (docs/history.md).</p>\n";
  if (v.series.empty()) o << "<p>Nothing recorded matches the filters.</p>\n";
  for (const Series& s : v.series) {
    // The fixture named as the text names it, the whole identity in its tooltip.
    const std::string fixture =
        s.fixture_identity ? "<span class=\"id\" title=\"" + markup_escape(*s.fixture_identity) + "\">" +
                                 markup_escape(v.short_fixtures(identity_digits(*s.fixture_identity))) + "</span>"
                           : markup_escape(s.fixture_label()) + " (no identity recorded)";
    o << "<section class=\"series\"><h2>" << markup_escape(s.candidate) << " &middot; gate "
      << markup_escape(s.gate) << " &middot; " << markup_escape(s.metric_label()) << "</h2>\n<p class=\"meta\">fixture "
      << fixture << "; "
      << s.points.size() << " figure(s)" << (s.missing ? ", " + std::to_string(s.missing) + " without a finite figure" : "")
      << (s.detection.deterministic && s.detection.scatter == 0 ? "; deterministic: compared exactly" : "") << "</p>\n";
    o << plot(v, s);
    for (const Change& ch : s.detection.changes) {
      const StoredFigure& p = s.points[ch.index];
      std::string kind = change_kind(v, ch);
      if (kind == "REGRESSION") kind = "Regression";
      kind[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(kind[0])));
      o << "<p class=\"changes\">" << markup_escape(kind) << " at #" << ch.index + 1 << " (commit <span class=\"id\" title=\""
        << markup_escape(p.commit.empty() ? "-" : p.commit) << "\">" << markup_escape(short_commit(v, p.commit))
        << "</span>): " << markup_escape(change_levels(ch.before, ch.after) + " (" + pct(ch.relative) + ")") << "</p>\n";
    }
    o << "</section>\n";
  }
  o << "</body></html>\n";
  return o.str();
}

}  // namespace ts::history
