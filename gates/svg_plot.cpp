#include "gates/svg_plot.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <sstream>

#include "gates/gate_file.hpp"
#include "gates/markup.hpp"

namespace ts {

namespace svg {
namespace {

constexpr double kWidth = 760;

// Every coordinate goes through here. The plots only place finite values, so
// a non-finite coordinate would be a bug; writing it as 0 keeps the page
// valid SVG (a browser drops an element whose coordinate is "nan").
std::string c(double v) {
  if (!std::isfinite(v)) return "0";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

std::string text_of_value(const std::optional<double>& v, const std::string& gap_text) {
  if (!v) return gap_text.empty() ? "missing" : gap_text;
  return format_number(*v);
}

bool drawable(const std::optional<double>& v, const Axis& a) { return v && a.shows(*v); }

// Labels longer than this are cut in the plot; the full name is in the
// row's tooltip and in the tables.
constexpr size_t kLabelChars = 40;

std::string short_label(const std::string& s) {
  if (s.size() <= kLabelChars) return s;
  // Cut between UTF-8 characters, never inside one.
  size_t k = kLabelChars - 3;
  while (k > 0 && (static_cast<unsigned char>(s[k]) & 0xC0) == 0x80) --k;
  return s.substr(0, k) + "...";
}

std::string open_svg(double w, double h, const std::string& title) {
  std::ostringstream o;
  o << "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"plot\" viewBox=\"0 0 " << c(w) << " " << c(h)
    << "\" width=\"" << c(w) << "\" height=\"" << c(h) << "\" role=\"img\" aria-label=\"" << markup_escape(title)
    << "\">\n<title>" << markup_escape(title) << "</title>\n";
  return o.str();
}

// 1, 2 or 5 times a power of ten, below (or above) v > 0, in log10 units.
// Computed in log units so that values near the double range do not
// overflow to a tick at infinity.
double log_floor125(double v) {
  const double e = std::floor(std::log10(v));
  const double m = v / std::pow(10.0, e);
  const double tol = 1 + 1e-9;
  return e + std::log10(m * tol >= 5 ? 5.0 : m * tol >= 2 ? 2.0 : 1.0);
}
double log_ceil125(double v) {
  const double e = std::floor(std::log10(v));
  const double m = v / std::pow(10.0, e);
  const double tol = 1 - 1e-9;
  return e + std::log10(m * tol <= 1 ? 1.0 : m * tol <= 2 ? 2.0 : m * tol <= 5 ? 5.0 : 10.0);
}

}  // namespace

Axis Axis::fit(const std::vector<double>& values) {
  double mn = std::numeric_limits<double>::infinity(), mx = -mn;
  for (double v : values)
    if (std::isfinite(v)) {
      mn = std::min(mn, v);
      mx = std::max(mx, v);
    }
  Axis a;
  if (!(mn <= mx)) return a;  // nothing finite to show
  if (mn > 0) {
    // Ends at 1-2-5 steps rather than whole decades: per-head figures that
    // differ by 20% stay apart instead of sharing one corner of a decade.
    a.log = true;
    a.lo = log_floor125(mn);
    a.hi = log_ceil125(mx);
    if (a.hi - a.lo < 1e-9) {
      a.lo -= 0.5;
      a.hi += 0.5;
    }
    return a;
  }
  double lo = std::min(0.0, mn), hi = std::max(0.0, mx);
  if (hi == lo) hi = lo + 1;
  const double raw = (hi - lo) / 5;
  if (!std::isfinite(raw) || raw <= 0) {
    a.lo = lo;
    a.hi = hi;
    a.step = hi - lo;
    return a;
  }
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * mag >= raw) {
      step = m * mag;
      break;
    }
  a.step = step;
  a.lo = std::floor(lo / step) * step;
  a.hi = std::ceil(hi / step) * step;
  if (a.hi <= a.lo) a.hi = a.lo + step;
  return a;
}

bool Axis::shows(double v) const { return std::isfinite(v) && (!log || v > 0); }

double Axis::frac_units(double u) const {
  const double f = (u - lo) / (hi - lo);
  return std::clamp(f, 0.0, 1.0);
}

double Axis::frac(double v) const { return frac_units(log ? std::log10(v) : v); }

std::vector<Axis::Tick> Axis::ticks() const {
  std::vector<Tick> t;
  if (log) {
    const double eps = 1e-9;
    // Up to three decades: 1, 2, 5 in each; beyond, every k-th decade so
    // that about eight labels remain.
    const bool fine = hi - lo <= 3;
    const double stride = fine ? 1 : std::max(1.0, std::ceil((hi - lo) / 8));
    for (double e = std::floor(lo); e <= hi + eps; e += stride)
      for (double m : fine ? std::vector<double>{1, 2, 5} : std::vector<double>{1}) {
        const double u = e + std::log10(m);
        if (u < lo - eps || u > hi + eps) continue;
        const std::string label = (e >= -3 && e <= 3) ? format_number(m * std::pow(10.0, e))
                                                      : format_number(m) + "e" + std::to_string(std::lround(e));
        t.push_back({frac_units(u), label});
      }
    return t;
  }
  if (!(step > 0) || !std::isfinite(step)) return {{0.0, format_number(lo)}, {1.0, format_number(hi)}};
  for (int i = 0; i <= 64; ++i) {
    const double u = lo + i * step;
    if (u > hi + step * 1e-9) break;
    t.push_back({frac_units(u), format_number(std::fabs(u) < step * 1e-9 ? 0.0 : u)});
  }
  return t;
}

std::string dot_plot(const std::string& title, const std::vector<Dot>& rows, const std::vector<BoundLine>& bounds) {
  std::vector<double> vals;
  for (const auto& r : rows)
    for (const auto& v : {r.value, r.lower, r.upper, r.row_bound})
      if (v) vals.push_back(*v);
  for (const auto& b : bounds) vals.push_back(b.value);
  const Axis axis = Axis::fit(vals);

  size_t longest = 4;
  for (const auto& r : rows) longest = std::max(longest, short_label(r.label).size());
  const double x0 = std::clamp(7.0 * static_cast<double>(longest) + 16, 90.0, 300.0);
  const double x1 = kWidth - 110, top = 26, row_h = 26;
  const double plot_h = row_h * static_cast<double>(std::max<size_t>(rows.size(), 1));
  const double bottom = top + plot_h, h = bottom + 40;
  auto X = [&](double v) { return x0 + axis.frac(v) * (x1 - x0); };

  std::ostringstream o;
  o << open_svg(kWidth, h, title);
  for (const auto& t : axis.ticks()) {
    const double x = x0 + t.at * (x1 - x0);
    o << "<line class=\"grid\" x1=\"" << c(x) << "\" y1=\"" << c(top) << "\" x2=\"" << c(x) << "\" y2=\""
      << c(bottom) << "\"/>";
    o << "<text class=\"tick\" x=\"" << c(x) << "\" y=\"" << c(bottom + 16) << "\" text-anchor=\"middle\">"
      << markup_escape(t.label) << "</text>\n";
  }
  o << "<line class=\"axis\" x1=\"" << c(x0) << "\" y1=\"" << c(bottom) << "\" x2=\"" << c(x1) << "\" y2=\""
    << c(bottom) << "\"/>\n";
  o << "<text class=\"note\" x=\"" << c(x1) << "\" y=\"" << c(bottom + 32) << "\" text-anchor=\"end\">"
    << (axis.log ? "log10 axis" : "linear axis") << "</text>\n";

  for (size_t i = 0; i < rows.size(); ++i) {
    const Dot& r = rows[i];
    const double y = top + row_h * (static_cast<double>(i) + 0.5);
    o << "<g class=\"row\"><title>" << markup_escape(r.label + ": " + text_of_value(r.value, r.gap_text)) << "</title>";
    if (i % 2 == 0)
      o << "<rect class=\"band\" x=\"" << c(x0) << "\" y=\"" << c(y - row_h / 2) << "\" width=\"" << c(x1 - x0)
        << "\" height=\"" << c(row_h) << "\"/>";
    o << "<text class=\"label\" x=\"" << c(x0 - 8) << "\" y=\"" << c(y + 4) << "\" text-anchor=\"end\">"
      << markup_escape(short_label(r.label)) << "</text>";
    if (drawable(r.row_bound, axis))
      o << "<line class=\"bound\" x1=\"" << c(X(*r.row_bound)) << "\" y1=\"" << c(y - row_h / 2 + 2) << "\" x2=\""
        << c(X(*r.row_bound)) << "\" y2=\"" << c(y + row_h / 2 - 2) << "\"><title>bound "
        << markup_escape(format_number(*r.row_bound)) << "</title></line>";
    if (drawable(r.value, axis)) {
      const double cx = X(*r.value);
      double right = cx;
      if (drawable(r.lower, axis) && drawable(r.upper, axis)) {
        const double a = X(*r.lower), b = X(*r.upper);
        right = std::max(right, b);
        o << "<path class=\"whisker\" d=\"M" << c(a) << " " << c(y - 5) << "V" << c(y + 5) << "M" << c(a) << " "
          << c(y) << "H" << c(b) << "M" << c(b) << " " << c(y - 5) << "V" << c(y + 5) << "\"/>";
      }
      o << "<circle class=\"dot " << markup_escape(r.css) << "\" cx=\"" << c(cx) << "\" cy=\"" << c(y)
        << "\" r=\"5\"/>";
      o << "<text class=\"value\" x=\"" << c(right + 9) << "\" y=\"" << c(y + 4) << "\">"
        << markup_escape(format_number(*r.value)) << "</text>";
    } else {
      o << "<rect class=\"gap\" x=\"" << c(x0 + 2) << "\" y=\"" << c(y - row_h / 2 + 3) << "\" width=\""
        << c(x1 - x0 - 4) << "\" height=\"" << c(row_h - 6) << "\"/>";
      o << "<text class=\"gaptext\" x=\"" << c((x0 + x1) / 2) << "\" y=\"" << c(y + 4)
        << "\" text-anchor=\"middle\">" << markup_escape(text_of_value(r.value, r.gap_text)) << "</text>";
    }
    o << "</g>\n";
  }

  // Bound labels alternate sides so a min and a max close together stay legible.
  for (size_t i = 0; i < bounds.size(); ++i) {
    const BoundLine& b = bounds[i];
    if (!axis.shows(b.value)) continue;
    const double x = X(b.value);
    o << "<line class=\"bound\" x1=\"" << c(x) << "\" y1=\"" << c(top - 6) << "\" x2=\"" << c(x) << "\" y2=\""
      << c(bottom) << "\"/>";
    o << "<text class=\"boundtext\" x=\"" << c(x + (i % 2 ? 4 : -4)) << "\" y=\"" << c(top - 10)
      << "\" text-anchor=\"" << (i % 2 ? "start" : "end") << "\">" << markup_escape(b.label) << "</text>\n";
  }
  o << "</svg>\n";
  return o.str();
}

std::string line_plot(const std::string& title, const std::string& x_label, const std::string& y_label,
                      const std::vector<std::optional<double>>& y) {
  std::vector<double> vals;
  for (const auto& v : y)
    if (v) vals.push_back(*v);
  const Axis axis = Axis::fit(vals);
  const double h = 280, x0 = 64, x1 = kWidth - 16, top = 22, bottom = h - 46;
  const size_t n = y.size();
  auto X = [&](size_t i) {
    return n <= 1 ? (x0 + x1) / 2 : x0 + static_cast<double>(i) / static_cast<double>(n - 1) * (x1 - x0);
  };
  auto Y = [&](double v) { return bottom - axis.frac(v) * (bottom - top); };

  std::ostringstream o;
  o << open_svg(kWidth, h, title);
  for (const auto& t : axis.ticks()) {
    const double y = bottom - t.at * (bottom - top);
    o << "<line class=\"grid\" x1=\"" << c(x0) << "\" y1=\"" << c(y) << "\" x2=\"" << c(x1) << "\" y2=\""
      << c(y) << "\"/>";
    o << "<text class=\"tick\" x=\"" << c(x0 - 6) << "\" y=\"" << c(y + 4) << "\" text-anchor=\"end\">"
      << markup_escape(t.label) << "</text>\n";
  }
  // Index ticks at a 1-2-5 step giving at most about ten labels.
  const size_t step = [n] {
    for (size_t mag = 1;; mag *= 10)
      for (size_t m : {1, 2, 5})
        if (n / (m * mag) <= 10) return m * mag;
  }();
  for (size_t i = 0; i < n; i += step)
    o << "<text class=\"tick\" x=\"" << c(X(i)) << "\" y=\"" << c(bottom + 16) << "\" text-anchor=\"middle\">" << i
      << "</text>";
  o << "\n<path class=\"axis\" d=\"M" << c(x0) << " " << c(top) << "V" << c(bottom) << "H" << c(x1) << "\"/>\n";
  o << "<text class=\"note\" x=\"" << c((x0 + x1) / 2) << "\" y=\"" << c(bottom + 34) << "\" text-anchor=\"middle\">"
    << markup_escape(x_label) << "</text>";
  o << "<text class=\"note\" x=\"" << c(x0) << "\" y=\"" << c(top - 8) << "\">" << markup_escape(y_label) << " ("
    << (axis.log ? "log10 axis" : "linear axis") << ")</text>\n";

  // Runs of drawable points become polylines; anything else ends the run.
  std::string run;
  size_t run_len = 0;
  auto flush = [&] {
    if (run_len > 1) o << "<polyline class=\"series\" points=\"" << run << "\"/>\n";
    run.clear();
    run_len = 0;
  };
  for (size_t i = 0; i < n; ++i) {
    if (drawable(y[i], axis)) {
      if (!run.empty()) run += ' ';
      run.append(c(X(i))).append(",").append(c(Y(*y[i])));
      ++run_len;
    } else {
      flush();
    }
  }
  flush();
  const bool mark_all = n <= 64;
  for (size_t i = 0; i < n; ++i) {
    if (drawable(y[i], axis)) {
      // A point between two gaps has no line, so it always gets its marker.
      const bool alone = (i == 0 || !drawable(y[i - 1], axis)) && (i + 1 == n || !drawable(y[i + 1], axis));
      if (mark_all || alone)
        o << "<circle class=\"point\" cx=\"" << c(X(i)) << "\" cy=\"" << c(Y(*y[i])) << "\" r=\"3\"><title>" << i
          << ": " << markup_escape(format_number(*y[i])) << "</title></circle>";
    } else {
      const double x = X(i);
      o << "<path class=\"gapmark\" d=\"M" << c(x - 4) << " " << c(bottom - 4) << "L" << c(x + 4) << " "
        << c(bottom + 4) << "M" << c(x - 4) << " " << c(bottom + 4) << "L" << c(x + 4) << " " << c(bottom - 4)
        << "\"><title>" << i << ": " << markup_escape(text_of_value(y[i], "undefined")) << "</title></path>";
    }
  }
  o << "\n</svg>\n";
  return o.str();
}

}  // namespace svg
}  // namespace ts
