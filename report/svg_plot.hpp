#pragma once
// Inline SVG charts for the HTML reports (gates/README.md "HTML"), drawn as
// people read plots: a dot plot (one row per candidate, bound lines, the
// noise floor, interval whiskers), a group plot (per head / query block /
// frame: points, never a joined series), an x-y plot (curves and scatter: a
// scan's error against shape, a sweep's Pareto front) and a heatmap (2-D
// maps). A figure that is missing or not finite is never placed on an axis:
// it is drawn as a marked gap, so a NaN cannot pass for a small number.
//
// Value axes:
// - log10 when every finite value is >= 0 and one is > 0; values at or below
//   the axis' floor (a zero, or a figure decades below the rest) are drawn ON
//   the floor with an open marker, and the axis says "0 and values <= F drawn
//   at F", so one exact candidate does not force every plot onto a linear axis;
// - linear when a value is negative (a negative cosine has no log);
// - "1 - v" (Scale::one_minus) for a cosine: 1 - cos on a log axis, ticks
//   labelled with the cosine itself, so that 0.9996 and a 0.999 bound lie
//   apart and not on one pixel.
// Ranges cover the values, the bounds and the noise floor, at 1-2-5 ends.
#include <optional>
#include <string>
#include <vector>

namespace ts {
namespace svg {

// integer: linear, ticks at whole numbers only (block or step indices).
enum class Scale { automatic, linear, log, one_minus, integer };

struct Axis {
  bool log = false;
  bool one_minus = false;  // positions by 1 - v (always on a log axis)
  double lo = 0, hi = 1;   // in axis units (log10 of the value, or of 1 - v)
  double step = 0.2;       // tick spacing of a linear axis
  // On a log axis: values (after 1 - v) at or below 10^floor are drawn at the
  // floor; has_floor when a value of the fit was there.
  double floor = 0;
  bool has_floor = false;

  struct Tick {
    double at;  // 0 at lo, 1 at hi
    std::string label;
  };

  // Non-finite values are ignored. `scale` automatic: log as described above.
  static Axis fit(const std::vector<double>& values);
  static Axis fit(const std::vector<double>& values, Scale scale);
  bool shows(double v) const;   // finite (a log axis shows values <= the floor on it)
  bool on_floor(double v) const;  // drawn on the floor, not at its own place
  double frac(double v) const;  // 0 at lo, 1 at hi; v as shows() allows
  double frac_units(double u) const;
  std::vector<Tick> ticks() const;  // at least three where the range allows
  std::string note() const;         // "log10 axis", "linear axis", plus the floor
};

struct Dot {
  std::string label;
  std::optional<double> value;  // absent or not finite: a marked gap
  std::string gap_text;         // what the gap says when value is absent ("missing", "undefined")
  std::optional<double> lower, upper;  // whiskers, e.g. a confidence interval
  std::optional<double> row_bound;     // a bound of this row only (k x the baseline's figure)
  std::string css;                     // class of the marker (pass, fail, open, missing)
};

struct BoundLine {
  double value;
  std::string label;
};

struct DotOptions {
  Scale scale = Scale::automatic;
  // The baseline's own figure against exact (what an exact candidate would
  // score), drawn as a grey line labelled `noise_floor_label`.
  std::optional<double> noise_floor;
  std::string noise_floor_label = "baseline vs exact";
};

std::string dot_plot(const std::string& title, const std::vector<Dot>& rows, const std::vector<BoundLine>& bounds);
std::string dot_plot(const std::string& title, const std::vector<Dot>& rows, const std::vector<BoundLine>& bounds,
                     const DotOptions& options);

// Groups 0..n-1 (heads, query blocks, frames) as points: a group is not a
// point of a series, so nothing joins them. Each point carries its value as
// a label when n <= 24 (always in its tooltip); `floor` (the baseline's own
// figure of each group, optional per group) is drawn as a grey tick per
// group; bounds as horizontal dashed lines. Non-finite or absent values are
// marked x on the index axis.
struct GroupPlot {
  std::string title, x_label, y_label;
  std::vector<std::optional<double>> values;
  std::vector<std::optional<double>> floor;  // empty, or one per group
  std::string floor_label = "baseline vs exact";
  std::vector<BoundLine> bounds;
  Scale scale = Scale::automatic;
};
std::string group_plot(const GroupPlot& plot);

// y by index 0..n-1 as a series (a trend over runs, steps): absent or
// non-finite points break the line and are marked on the index axis.
std::string line_plot(const std::string& title, const std::string& x_label, const std::string& y_label,
                      const std::vector<std::optional<double>>& y);

// Curves and scatter over a numeric x. Series with `joined` are drawn as a
// line through their points in x order (a scan's curve, a Pareto front);
// others as points. Every point may carry a label (drawn beside it: above right, else
// where it overlaps no label drawn before and stays inside the plot).
struct XYPoint {
  double x;
  std::optional<double> y;  // absent / non-finite: marked x at its x on the axis
  std::string label;        // drawn beside the point ("" = none)
  std::string css;          // marker class (pass, fail, ...)
};
struct XYSeries {
  std::string name, css;  // css: the series' colour class (s0, s1, s2, ...)
  std::vector<XYPoint> points;
  bool joined = true;
  bool markers = true;  // false: the line alone (a front drawn through other series' points)
};
struct Span {  // a shaded x interval, e.g. where a scan located a cliff
  double from, to;
  std::string label;
};
struct XYPlot {
  std::string title, x_label, y_label;
  std::vector<XYSeries> series;
  Scale x_scale = Scale::automatic, y_scale = Scale::automatic;
  std::vector<BoundLine> y_bounds;  // horizontal dashed lines
  std::vector<BoundLine> x_bounds;  // vertical dashed lines (a Pareto plot's rel_l2 bound)
  std::vector<Span> x_spans;
};
std::string xy_plot(const XYPlot& plot);

// A 2-D map (head x query block, head x frame, frame x (h, w)): one cell per
// cells[row][col], colour by value on a log scale (linear when a value is
// negative; `scale` as for axes), a colour bar with labelled ticks, the
// value written in each cell when the map is small enough (<= 16 columns),
// every value in the cell's tooltip. Non-finite cells are hatched and say
// NaN; absent ones are blank and say "undefined". `highlight_above`: cells
// above it are outlined (a bound, or k x the baseline's own map).
// `row_names` / `col_names` may be empty (then 0..n-1).
struct Heatmap {
  std::string title, row_label, col_label, value_label = "rel_l2";
  std::vector<std::vector<std::optional<double>>> cells;
  std::vector<std::string> row_names, col_names;
  Scale scale = Scale::automatic;
  std::optional<double> lo, hi;  // colour range (default: the values')
  std::optional<double> highlight_above;
};
std::string heatmap(const Heatmap& map);

}  // namespace svg

// The heatmap under the name pages outside gates/ look for.
inline std::string svg_heatmap(const svg::Heatmap& map) { return svg::heatmap(map); }

}  // namespace ts
