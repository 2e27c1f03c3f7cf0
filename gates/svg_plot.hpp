#pragma once
// Inline SVG charts for the HTML reports: a dot plot (one row per candidate,
// bound lines, optional interval whiskers) and a line plot by index. A figure
// that is missing or not finite is never placed on an axis: it is drawn as a
// marked gap, so a NaN cannot pass for a small number.
#include <optional>
#include <string>
#include <vector>

namespace ts {
namespace svg {

// A value axis: log10 when every value it has to show is positive (figures
// spanning decades stay readable), linear otherwise (a bound of 0 or a
// negative cosine has no place on a log axis).
struct Axis {
  bool log = false;
  double lo = 0, hi = 1;  // in axis units (log10 of the value on a log axis)
  double step = 0.2;      // tick spacing of a linear axis

  struct Tick {
    double at;  // 0 at lo, 1 at hi
    std::string label;
  };

  static Axis fit(const std::vector<double>& values);  // non-finite values are ignored
  bool shows(double v) const;                           // finite, and positive on a log axis
  double frac(double v) const;                          // 0 at lo, 1 at hi; v as shows() allows
  double frac_units(double u) const;                    // the same for u in axis units
  std::vector<Tick> ticks() const;
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

std::string dot_plot(const std::string& title, const std::vector<Dot>& rows, const std::vector<BoundLine>& bounds);

// y by index 0..n-1; absent or non-finite points break the line and are
// marked on the index axis.
std::string line_plot(const std::string& title, const std::string& x_label, const std::string& y_label,
                      const std::vector<std::optional<double>>& y);

}  // namespace svg
}  // namespace ts
