#include "report/svg_plot.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <iterator>
#include <sstream>

#include "gates/gate_file.hpp"
#include "report/markup.hpp"

namespace ts {

namespace svg {
namespace {

constexpr double kWidth = 760;
// A log axis reaches at most this many decades below its largest value:
// figures further down (and zeros) sit on the floor, so one exact candidate
// at 1e-300 does not squeeze every other figure into a corner.
constexpr double kMaxDecades = 24;

// Every coordinate goes through here. The plots only place finite values, so
// a non-finite coordinate would be a bug; writing it as 0 keeps the page
// valid SVG (a browser drops an element whose coordinate is "nan").
std::string c(double v) {
  if (!std::isfinite(v)) return "0";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

std::string esc(const std::string& s) { return markup_escape(s); }

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

std::string open_svg(double w, double h, const std::string& title, const std::string& kind) {
  std::ostringstream o;
  o << "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"plot " << kind << "\" viewBox=\"0 0 " << c(w) << " "
    << c(h) << "\" width=\"" << c(w) << "\" height=\"" << c(h) << "\" role=\"img\" aria-label=\"" << esc(title)
    << "\">\n<title>" << esc(title) << "</title>\n";
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

double nice_step(double raw) {
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * mag >= raw * (1 - 1e-12)) return m * mag;
  return 10 * mag;
}

// m x 10^e as a tick reads it: plain near 1, 20k / 3M for lengths, 1e19 for ulps.
std::string tick_text(double m, double e) {
  const long ei = std::lround(e);
  if (ei >= -3 && ei <= 3) return format_number(m * std::pow(10.0, e));
  if (ei > 3 && ei < 6) return format_number(m * std::pow(10.0, e - 3)) + "k";
  if (ei >= 6 && ei < 9) return format_number(m * std::pow(10.0, e - 6)) + "M";
  return format_number(m) + "e" + std::to_string(ei);
}

// A cosine tick at 1 - x, with the digits that tell it from 1.
std::string one_minus_text(double x) {
  if (x >= 0.1) return format_number(1 - x);
  const int digits = std::clamp(static_cast<int>(std::ceil(-std::log10(x) - 1e-9)) + 1, 2, 16);
  return format_number(1 - x, digits);
}

// Colours of the heatmap, light (low) to dark (high): legible in print and
// for the common colour-vision deficiencies (a viridis-like ramp).
std::string ramp(double f) {
  static const double stops[][3] = {{253, 231, 37}, {94, 201, 98}, {33, 145, 140}, {59, 82, 139}, {68, 1, 84}};
  f = std::clamp(f, 0.0, 1.0) * 4;
  const int i = std::min(3, static_cast<int>(f));
  const double t = f - i;
  char buf[16];
  std::snprintf(buf, sizeof buf, "#%02x%02x%02x", static_cast<int>(stops[i][0] + t * (stops[i + 1][0] - stops[i][0])),
                static_cast<int>(stops[i][1] + t * (stops[i + 1][1] - stops[i][1])),
                static_cast<int>(stops[i][2] + t * (stops[i + 1][2] - stops[i][2])));
  return buf;
}

}  // namespace

Axis Axis::fit(const std::vector<double>& values) { return fit(values, Scale::automatic); }

Axis Axis::fit(const std::vector<double>& values, Scale scale) {
  Axis a;
  a.one_minus = scale == Scale::one_minus;
  double mn = std::numeric_limits<double>::infinity(), mx = -mn, pos_mn = mn;
  bool any = false;
  for (double v : values) {
    if (!std::isfinite(v)) continue;
    const double u = a.one_minus ? 1 - v : v;
    any = true;
    mn = std::min(mn, u);
    mx = std::max(mx, u);
    if (u > 0) pos_mn = std::min(pos_mn, u);
  }
  const bool log = scale == Scale::log || a.one_minus ||
                   (scale == Scale::automatic && any && mn >= 0 && mx > 0);
  if (log && any && mx > 0) {
    a.log = true;
    // Ends at 1-2-5 steps rather than whole decades: per-head figures that
    // differ by 20% stay apart instead of sharing one corner of a decade.
    a.hi = log_ceil125(mx);
    const double top = std::log10(mx);
    const bool below = mn <= 0 || std::log10(pos_mn) < top - kMaxDecades;
    if (below) {
      // A floor a decade under the smallest positive figure that fits, so the
      // figures on it read as "at most this", apart from every real one.
      double f = std::floor(std::log10(pos_mn)) - 1;
      if (f < top - kMaxDecades) f = std::floor(top - kMaxDecades);
      a.lo = f;
      a.has_floor = true;
    } else {
      a.lo = log_floor125(pos_mn);
    }
    if (a.hi - a.lo < 1e-9) {
      a.lo -= 0.5;
      a.hi += 0.5;
    }
    a.floor = a.lo;
    return a;
  }
  a.one_minus = false;  // nothing positive to show as 1 - v: plain values
  if (!any) return a;
  double lo = std::min(0.0, mn), hi = std::max(0.0, mx);
  if (hi == lo) hi = lo + 1;
  const double raw = (hi - lo) / 5;
  if (!std::isfinite(raw) || raw <= 0) {
    a.lo = lo;
    a.hi = hi;
    a.step = hi - lo;
    return a;
  }
  a.step = nice_step(raw);
  if (scale == Scale::integer) a.step = std::max(1.0, a.step);
  a.lo = std::floor(lo / a.step) * a.step;
  a.hi = std::ceil(hi / a.step) * a.step;
  if (a.hi <= a.lo) a.hi = a.lo + a.step;
  return a;
}

bool Axis::shows(double v) const { return std::isfinite(v); }

bool Axis::on_floor(double v) const {
  if (!log || !std::isfinite(v)) return false;
  const double u = one_minus ? 1 - v : v;
  return u <= 0 || std::log10(u) <= floor + 1e-12;
}

double Axis::frac_units(double u) const {
  const double f = (u - lo) / (hi - lo);
  return std::clamp(f, 0.0, 1.0);
}

double Axis::frac(double v) const {
  if (!log) return frac_units(v);
  const double u = one_minus ? 1 - v : v;
  return u <= 0 ? 0.0 : frac_units(std::max(std::log10(u), floor));
}

std::vector<Axis::Tick> Axis::ticks() const {
  std::vector<Tick> t;
  const double eps = 1e-9;
  if (log) {
    auto label = [&](double m, double e) {
      return one_minus ? one_minus_text(m * std::pow(10.0, e)) : tick_text(m, e);
    };
    // Up to three decades: 1, 2, 5 in each (1, 2, 3, 5, 7 within one decade); beyond,
    // every k-th decade so that about eight labels remain.
    const double span = hi - lo;
    const double stride = span <= 3 ? 1 : std::max(1.0, std::ceil(span / 8));
    const std::vector<double> mant = span <= 1.01 ? std::vector<double>{1, 2, 3, 5, 7}
                                     : span <= 3  ? std::vector<double>{1, 2, 5}
                                                  : std::vector<double>{1};
    for (double e = std::floor(lo); e <= hi + eps; e += stride)
      for (double m : mant) {
        const double u = e + std::log10(m);
        if (u < lo - eps || u > hi + eps) continue;
        t.push_back({frac_units(u), label(m, e)});
      }
    if (t.size() < 3) {  // less than a decade between two 1-2-5 ends: linear ticks in value
      t.clear();
      const double a = std::pow(10.0, lo), b = std::pow(10.0, hi), s = nice_step((b - a) / 4);
      for (double x = std::ceil(a / s - eps) * s; x <= b * (1 + eps); x += s) {
        const double e = std::floor(std::log10(x));
        t.push_back({frac_units(std::log10(x)), label(x / std::pow(10.0, e), e)});
      }
    }
    if (has_floor && !t.empty() && t.front().at < 1e-9) t.front().label = (one_minus ? "\u2265 " : "\u2264 ") + t.front().label;
    else if (has_floor) t.insert(t.begin(), {0.0, (one_minus ? "\u2265 " : "\u2264 ") + label(1, lo)});
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

std::string Axis::note() const {
  if (!log) return "linear axis";
  std::string s = one_minus ? "log10 axis of 1 - cosine (ticks: the cosine)" : "log10 axis";
  if (has_floor) {
    const std::string f = format_number(std::pow(10.0, floor));
    s += one_minus ? "; cosine 1 and values >= " + one_minus_text(std::pow(10.0, floor)) + " drawn at that floor (open)"
                   : "; 0 and values <= " + f + " drawn at the floor " + f + " (open)";
  }
  return s;
}

namespace {

// The marker of a value: filled where it lies, open on a log axis' floor.
std::string marker(const Axis& axis, double v, double cx, double cy, const std::string& css, double r,
                   const std::string& tooltip) {
  std::ostringstream o;
  o << "<circle class=\"dot " << esc(css) << (axis.on_floor(v) ? " floor" : "") << "\" cx=\"" << c(cx)
    << "\" cy=\"" << c(cy) << "\" r=\"" << c(r) << "\">";
  if (!tooltip.empty()) o << "<title>" << esc(tooltip) << "</title>";
  o << "</circle>";
  return o.str();
}

}  // namespace

std::string dot_plot(const std::string& title, const std::vector<Dot>& rows, const std::vector<BoundLine>& bounds) {
  return dot_plot(title, rows, bounds, DotOptions{});
}

std::string dot_plot(const std::string& title, const std::vector<Dot>& rows, const std::vector<BoundLine>& bounds,
                     const DotOptions& opt) {
  std::vector<double> vals;
  for (const auto& r : rows)
    for (const auto& v : {r.value, r.lower, r.upper, r.row_bound})
      if (v) vals.push_back(*v);
  for (const auto& b : bounds) vals.push_back(b.value);
  if (opt.noise_floor) vals.push_back(*opt.noise_floor);
  const Axis axis = Axis::fit(vals, opt.scale);

  size_t longest = 4;
  for (const auto& r : rows) longest = std::max(longest, short_label(r.label).size());
  const double x0 = std::clamp(7.0 * static_cast<double>(longest) + 16, 90.0, 300.0);
  const double x1 = kWidth - 90, top = 40, row_h = 26;
  const double plot_h = row_h * static_cast<double>(std::max<size_t>(rows.size(), 1));
  const double bottom = top + plot_h, h = bottom + 44;
  auto X = [&](double v) { return x0 + axis.frac(v) * (x1 - x0); };

  std::ostringstream o;
  o << open_svg(kWidth, h, title, "dots");
  for (const auto& t : axis.ticks()) {
    const double x = x0 + t.at * (x1 - x0);
    o << "<line class=\"grid\" x1=\"" << c(x) << "\" y1=\"" << c(top) << "\" x2=\"" << c(x) << "\" y2=\""
      << c(bottom) << "\"/>";
    o << "<text class=\"tick\" x=\"" << c(x) << "\" y=\"" << c(bottom + 16) << "\" text-anchor=\"middle\">"
      << esc(t.label) << "</text>\n";
  }
  o << "<line class=\"axis\" x1=\"" << c(x0) << "\" y1=\"" << c(bottom) << "\" x2=\"" << c(x1) << "\" y2=\""
    << c(bottom) << "\"/>\n";
  o << "<text class=\"note\" x=\"" << c(x1) << "\" y=\"" << c(bottom + 34) << "\" text-anchor=\"end\">"
    << esc(axis.note()) << "</text>\n";

  for (size_t i = 0; i < rows.size(); ++i) {
    const Dot& r = rows[i];
    const double y = top + row_h * (static_cast<double>(i) + 0.5);
    o << "<g class=\"row\"><title>" << esc(r.label + ": " + text_of_value(r.value, r.gap_text)) << "</title>";
    if (i % 2 == 0)
      o << "<rect class=\"band\" x=\"" << c(x0) << "\" y=\"" << c(y - row_h / 2) << "\" width=\"" << c(x1 - x0)
        << "\" height=\"" << c(row_h) << "\"/>";
    o << "<text class=\"label\" x=\"" << c(x0 - 8) << "\" y=\"" << c(y + 4) << "\" text-anchor=\"end\">"
      << esc(short_label(r.label)) << "</text>";
    if (drawable(r.row_bound, axis))
      o << "<line class=\"bound\" x1=\"" << c(X(*r.row_bound)) << "\" y1=\"" << c(y - row_h / 2 + 2) << "\" x2=\""
        << c(X(*r.row_bound)) << "\" y2=\"" << c(y + row_h / 2 - 2) << "\"><title>bound "
        << esc(format_number(*r.row_bound)) << "</title></line>";
    if (drawable(r.value, axis)) {
      const double cx = X(*r.value);
      double right = cx;
      if (drawable(r.lower, axis) && drawable(r.upper, axis)) {
        const double a = X(*r.lower), b = X(*r.upper);
        right = std::max(right, std::max(a, b));
        o << "<path class=\"whisker\" d=\"M" << c(a) << " " << c(y - 5) << "V" << c(y + 5) << "M" << c(a) << " "
          << c(y) << "H" << c(b) << "M" << c(b) << " " << c(y - 5) << "V" << c(y + 5) << "\"/>";
      }
      o << marker(axis, *r.value, cx, y, r.css, 5, "");
      // The value beside its dot; left of it when the dot is at the right edge.
      const bool left = right > x1 - 60;
      o << "<text class=\"value\" x=\"" << c(left ? cx - 9 : right + 9) << "\" y=\"" << c(y + 4) << "\""
        << (left ? " text-anchor=\"end\"" : "") << ">" << esc(format_number(*r.value)) << "</text>";
    } else {
      o << "<rect class=\"gap\" x=\"" << c(x0 + 2) << "\" y=\"" << c(y - row_h / 2 + 3) << "\" width=\""
        << c(x1 - x0 - 4) << "\" height=\"" << c(row_h - 6) << "\"/>";
      o << "<text class=\"gaptext\" x=\"" << c((x0 + x1) / 2) << "\" y=\"" << c(y + 4)
        << "\" text-anchor=\"middle\">" << esc(text_of_value(r.value, r.gap_text)) << "</text>";
    }
    o << "</g>\n";
  }

  if (opt.noise_floor && axis.shows(*opt.noise_floor)) {
    const double x = X(*opt.noise_floor);
    o << "<line class=\"noisefloor\" x1=\"" << c(x) << "\" y1=\"" << c(top - 4) << "\" x2=\"" << c(x) << "\" y2=\""
      << c(bottom) << "\"><title>" << esc(opt.noise_floor_label + " " + format_number(*opt.noise_floor))
      << "</title></line>";
    const char* anchor = x < x0 + 80 ? "start" : x > x1 - 80 ? "end" : "middle";
    o << "<text class=\"floortext\" x=\"" << c(x) << "\" y=\"" << c(top - 8) << "\" text-anchor=\"" << anchor << "\">"
      << esc(opt.noise_floor_label + " " + format_number(*opt.noise_floor)) << "</text>\n";
  }
  // Bound labels above the floor's, alternating sides, so a min and a max
  // close together stay legible.
  for (size_t i = 0; i < bounds.size(); ++i) {
    const BoundLine& b = bounds[i];
    if (!axis.shows(b.value)) continue;
    const double x = X(b.value);
    o << "<line class=\"bound\" x1=\"" << c(x) << "\" y1=\"" << c(top - 20) << "\" x2=\"" << c(x) << "\" y2=\""
      << c(bottom) << "\"/>";
    o << "<text class=\"boundtext\" x=\"" << c(x + (i % 2 ? 4 : -4)) << "\" y=\"" << c(top - 24)
      << "\" text-anchor=\"" << (i % 2 ? "start" : "end") << "\">" << esc(b.label) << "</text>\n";
  }
  o << "</svg>\n";
  return o.str();
}

namespace {

// The frame of a plot with a value axis upwards: grid, ticks, axis note.
struct Frame {
  double x0 = 70, x1 = kWidth - 20, top = 30, bottom = 240;
  double Y(const Axis& a, double v) const { return bottom - a.frac(v) * (bottom - top); }
};

void y_axis(std::ostringstream& o, const Frame& f, const Axis& axis, const std::string& y_label) {
  for (const auto& t : axis.ticks()) {
    const double y = f.bottom - t.at * (f.bottom - f.top);
    o << "<line class=\"grid\" x1=\"" << c(f.x0) << "\" y1=\"" << c(y) << "\" x2=\"" << c(f.x1) << "\" y2=\""
      << c(y) << "\"/>";
    o << "<text class=\"tick\" x=\"" << c(f.x0 - 6) << "\" y=\"" << c(y + 4) << "\" text-anchor=\"end\">"
      << esc(t.label) << "</text>\n";
  }
  o << "<path class=\"axis\" d=\"M" << c(f.x0) << " " << c(f.top) << "V" << c(f.bottom) << "H" << c(f.x1)
    << "\"/>\n";
  o << "<text class=\"note\" x=\"" << c(f.x0) << "\" y=\"" << c(f.top - 12) << "\">" << esc(y_label) << " ("
    << esc(axis.note()) << ")</text>\n";
}

void h_bounds(std::ostringstream& o, const Frame& f, const Axis& axis, const std::vector<BoundLine>& bounds) {
  for (const auto& b : bounds) {
    if (!axis.shows(b.value)) continue;
    const double y = f.Y(axis, b.value);
    o << "<line class=\"bound\" x1=\"" << c(f.x0) << "\" y1=\"" << c(y) << "\" x2=\"" << c(f.x1) << "\" y2=\""
      << c(y) << "\"/><text class=\"boundtext\" x=\"" << c(f.x1 - 2) << "\" y=\"" << c(y - 4)
      << "\" text-anchor=\"end\">" << esc(b.label) << "</text>\n";
  }
}

std::string gap_mark(double x, double y, const std::string& tooltip) {
  std::ostringstream o;
  o << "<path class=\"gapmark\" d=\"M" << c(x - 4) << " " << c(y - 4) << "L" << c(x + 4) << " " << c(y + 4) << "M"
    << c(x - 4) << " " << c(y + 4) << "L" << c(x + 4) << " " << c(y - 4) << "\"><title>" << esc(tooltip)
    << "</title></path>";
  return o.str();
}

// Index ticks at a 1-2-5 step giving at most about ten labels.
size_t index_step(size_t n) {
  for (size_t mag = 1;; mag *= 10)
    for (size_t m : {1, 2, 5})
      if (n / (m * mag) <= 10) return m * mag;
}

}  // namespace

std::string group_plot(const GroupPlot& p) {
  std::vector<double> vals;
  for (const auto& v : p.values)
    if (v) vals.push_back(*v);
  for (const auto& v : p.floor)
    if (v) vals.push_back(*v);
  for (const auto& b : p.bounds) vals.push_back(b.value);
  const Axis axis = Axis::fit(vals, p.scale);
  const size_t n = p.values.size();
  const bool labels = n <= 40, rotated = n > 12;
  Frame f;
  f.top = rotated ? 80 : 44;
  f.bottom = f.top + 210;
  const double h = f.bottom + 50;
  const double slot = (f.x1 - f.x0) / static_cast<double>(std::max<size_t>(n, 1));
  auto X = [&](size_t i) { return f.x0 + slot * (static_cast<double>(i) + 0.5); };

  std::ostringstream o;
  o << open_svg(kWidth, h, p.title, "groups");
  y_axis(o, f, axis, p.y_label);
  const size_t step = index_step(n);
  for (size_t i = 0; i < n; i += step)
    o << "<text class=\"tick\" x=\"" << c(X(i)) << "\" y=\"" << c(f.bottom + 16) << "\" text-anchor=\"middle\">" << i
      << "</text>";
  o << "\n<text class=\"note\" x=\"" << c((f.x0 + f.x1) / 2) << "\" y=\"" << c(f.bottom + 36)
    << "\" text-anchor=\"middle\">" << esc(p.x_label) << " (each a point of its own)</text>\n";
  h_bounds(o, f, axis, p.bounds);

  bool any_floor = false;
  const double fw = std::clamp(slot * 0.8, 3.0, 18.0);
  for (size_t i = 0; i < n && i < p.floor.size(); ++i) {
    if (!drawable(p.floor[i], axis)) continue;
    any_floor = true;
    const double y = f.Y(axis, *p.floor[i]);
    o << "<line class=\"noisefloor\" x1=\"" << c(X(i) - fw / 2) << "\" y1=\"" << c(y) << "\" x2=\""
      << c(X(i) + fw / 2) << "\" y2=\"" << c(y) << "\"><title>" << i << ": " << esc(p.floor_label) << " "
      << esc(format_number(*p.floor[i])) << "</title></line>";
  }
  if (any_floor)
    o << "\n<line class=\"noisefloor\" x1=\"" << c(f.x1 - 150) << "\" y1=\"" << c(f.top - 26) << "\" x2=\""
      << c(f.x1 - 136) << "\" y2=\"" << c(f.top - 26) << "\"/><text class=\"floortext\" x=\"" << c(f.x1 - 132)
      << "\" y=\"" << c(f.top - 22) << "\">" << esc(p.floor_label) << "</text>\n";

  // The worst group's value is always written, the others where they fit.
  size_t worst = n;
  for (size_t i = 0; i < n; ++i)
    if (drawable(p.values[i], axis) && (worst == n || *p.values[i] > *p.values[worst])) worst = i;
  const double r = std::clamp(slot * 0.35, 2.0, 5.0);
  for (size_t i = 0; i < n; ++i) {
    const auto& v = p.values[i];
    if (!drawable(v, axis)) {
      o << gap_mark(X(i), f.bottom, std::to_string(i) + ": " + text_of_value(v, "undefined"));
      continue;
    }
    const double y = f.Y(axis, *v);
    o << marker(axis, *v, X(i), y, "group", r, std::to_string(i) + ": " + format_number(*v));
    if (labels || i == worst) {
      if (rotated)
        o << "<text class=\"value\" transform=\"translate(" << c(X(i) + 4) << "," << c(y - 8)
          << ") rotate(-90)\">" << esc(format_number(*v)) << "</text>";
      else
        o << "<text class=\"value\" x=\"" << c(X(i)) << "\" y=\"" << c(y - 9) << "\" text-anchor=\"middle\">"
          << esc(format_number(*v)) << "</text>";
    }
  }
  o << "\n</svg>\n";
  return o.str();
}

std::string line_plot(const std::string& title, const std::string& x_label, const std::string& y_label,
                      const std::vector<std::optional<double>>& y) {
  std::vector<double> vals;
  for (const auto& v : y)
    if (v) vals.push_back(*v);
  const Axis axis = Axis::fit(vals);
  Frame f;
  const double h = f.bottom + 46;
  const size_t n = y.size();
  auto X = [&](size_t i) {
    return n <= 1 ? (f.x0 + f.x1) / 2
                  : f.x0 + static_cast<double>(i) / static_cast<double>(n - 1) * (f.x1 - f.x0);
  };
  auto Y = [&](double v) { return f.Y(axis, v); };

  std::ostringstream o;
  o << open_svg(kWidth, h, title, "line");
  y_axis(o, f, axis, y_label);
  const size_t step = index_step(n);
  for (size_t i = 0; i < n; i += step)
    o << "<text class=\"tick\" x=\"" << c(X(i)) << "\" y=\"" << c(f.bottom + 16) << "\" text-anchor=\"middle\">" << i
      << "</text>";
  o << "<text class=\"note\" x=\"" << c((f.x0 + f.x1) / 2) << "\" y=\"" << c(f.bottom + 34)
    << "\" text-anchor=\"middle\">" << esc(x_label) << "</text>\n";

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
          << ": " << esc(format_number(*y[i])) << "</title></circle>";
    } else {
      o << gap_mark(X(i), f.bottom, std::to_string(i) + ": " + text_of_value(y[i], "undefined"));
    }
  }
  o << "\n</svg>\n";
  return o.str();
}

std::string xy_plot(const XYPlot& p) {
  std::vector<double> xs, ys;
  for (const auto& s : p.series)
    for (const auto& pt : s.points) {
      xs.push_back(pt.x);
      if (pt.y) ys.push_back(*pt.y);
    }
  for (const auto& b : p.y_bounds) ys.push_back(b.value);
  for (const auto& b : p.x_bounds) xs.push_back(b.value);
  for (const auto& s : p.x_spans) {
    xs.push_back(s.from);
    xs.push_back(s.to);
  }
  const Axis ax = Axis::fit(xs, p.x_scale), ay = Axis::fit(ys, p.y_scale);
  Frame f;
  f.top = 44;
  f.bottom = 290;
  const double h = f.bottom + 50;
  auto X = [&](double x) { return f.x0 + ax.frac(x) * (f.x1 - f.x0); };
  auto Y = [&](double y) { return f.Y(ay, y); };

  std::ostringstream o;
  o << open_svg(kWidth, h, p.title, "xy");
  for (const auto& s : p.x_spans) {
    const double a = X(std::min(s.from, s.to)), b = X(std::max(s.from, s.to));
    o << "<rect class=\"span\" x=\"" << c(a - 1) << "\" y=\"" << c(f.top) << "\" width=\"" << c(b - a + 2)
      << "\" height=\"" << c(f.bottom - f.top) << "\"><title>" << esc(s.label) << "</title></rect>"
      << "<text class=\"spantext\" x=\"" << c((a + b) / 2) << "\" y=\"" << c(f.top + 12)
      << "\" text-anchor=\"middle\">" << esc(s.label) << "</text>\n";
  }
  y_axis(o, f, ay, p.y_label);
  for (const auto& t : ax.ticks()) {
    const double x = f.x0 + t.at * (f.x1 - f.x0);
    o << "<line class=\"grid\" x1=\"" << c(x) << "\" y1=\"" << c(f.top) << "\" x2=\"" << c(x) << "\" y2=\""
      << c(f.bottom) << "\"/><text class=\"tick\" x=\"" << c(x) << "\" y=\"" << c(f.bottom + 16)
      << "\" text-anchor=\"middle\">" << esc(t.label) << "</text>";
  }
  o << "\n<text class=\"note\" x=\"" << c((f.x0 + f.x1) / 2) << "\" y=\"" << c(f.bottom + 36)
    << "\" text-anchor=\"middle\">" << esc(p.x_label + " (" + ax.note() + ")") << "</text>\n";
  h_bounds(o, f, ay, p.y_bounds);
  for (const auto& b : p.x_bounds) {
    if (!ax.shows(b.value)) continue;
    const double x = X(b.value);
    o << "<line class=\"bound\" x1=\"" << c(x) << "\" y1=\"" << c(f.top - 4) << "\" x2=\"" << c(x) << "\" y2=\""
      << c(f.bottom) << "\"/><text class=\"boundtext\" x=\"" << c(x + 4) << "\" y=\"" << c(f.top + 26) << "\">"
      << esc(b.label) << "</text>\n";
  }

  // Point labels go where they overlap no label placed before (the bounds' own included) and
  // stay inside the picture; widths are estimated at 11 px type.
  struct Box {
    double l, t, r, b;
  };
  std::vector<Box> placed;
  auto text_box = [](double x, double base, const std::string& text, bool end) {
    const double w = 6.5 * static_cast<double>(text.size());
    return end ? Box{x - w, base - 10, x, base + 2} : Box{x, base - 10, x + w, base + 2};
  };
  placed.push_back(text_box(f.x0, f.top - 12, p.y_label + " (" + ay.note() + ")", false));
  // Legend, top right, one entry per named series, its line clear of the y axis' note below it.
  constexpr double kLegendUp = 30;
  double lx = f.x1;
  for (auto it = p.series.rbegin(); it != p.series.rend(); ++it) {
    if (it->name.empty()) continue;
    const double w = 7.0 * static_cast<double>(it->name.size()) + 24;
    lx -= w;
    if (it->markers)
      o << "<circle class=\"dot " << esc(it->css) << "\" cx=\"" << c(lx + 6) << "\" cy=\"" << c(f.top - kLegendUp)
        << "\" r=\"4\"/>";
    else
      o << "<line class=\"series " << esc(it->css) << "\" x1=\"" << c(lx - 6) << "\" y1=\"" << c(f.top - kLegendUp)
        << "\" x2=\"" << c(lx + 10) << "\" y2=\"" << c(f.top - kLegendUp) << "\"/>";
    o << "<text class=\"legend\" x=\"" << c(lx + 14) << "\" y=\"" << c(f.top - kLegendUp + 4) << "\">"
      << esc(it->name) << "</text>";
    placed.push_back({lx - 6, f.top - kLegendUp - 8, lx + w, f.top - kLegendUp + 8});
  }
  o << "\n";

  for (const auto& b : p.y_bounds)
    if (ay.shows(b.value)) placed.push_back(text_box(f.x1 - 2, Y(b.value) - 4, b.label, true));
  auto place_label = [&](double x, double y, const std::string& text) {
    static const double offsets[][3] = {{6, -6, 0},  {6, 14, 0},  {-6, -6, 1}, {-6, 14, 1}, {6, -18, 0}, {-6, -18, 1},
                                        {6, 26, 0},  {-6, 26, 1}, {6, -30, 0}, {-6, -30, 1}, {6, 38, 0}, {-6, 38, 1}};
    auto inside = [&](const Box& bx) { return bx.l >= 0 && bx.r <= kWidth && bx.t >= 0 && bx.b <= h; };
    auto clear = [&](const Box& bx) {
      for (const Box& q : placed)
        if (bx.l < q.r && q.l < bx.r && bx.t < q.b && q.t < bx.b) return false;
      return true;
    };
    // The first place inside the picture that is clear of other labels, else the first inside.
    std::optional<size_t> pick, first_inside;
    for (size_t i = 0; i < std::size(offsets) && !pick; ++i) {
      const Box bx = text_box(x + offsets[i][0], y + offsets[i][1], text, offsets[i][2] > 0);
      if (!inside(bx)) continue;
      if (!first_inside) first_inside = i;
      if (clear(bx)) pick = i;
    }
    if (!pick) pick = first_inside.value_or(0);
    const double* at = offsets[*pick];
    const bool end = at[2] > 0;
    placed.push_back(text_box(x + at[0], y + at[1], text, end));
    return "<text class=\"value\" x=\"" + c(x + at[0]) + "\" y=\"" + c(y + at[1]) + "\"" +
           (end ? " text-anchor=\"end\"" : "") + ">" + esc(text) + "</text>";
  };

  for (const auto& s : p.series) {
    std::vector<const XYPoint*> pts;
    for (const auto& pt : s.points)
      if (std::isfinite(pt.x)) pts.push_back(&pt);
    if (s.joined) {
      std::stable_sort(pts.begin(), pts.end(), [](const XYPoint* a, const XYPoint* b) { return a->x < b->x; });
      std::string run;
      size_t len = 0;
      auto flush = [&] {
        if (len > 1) o << "<polyline class=\"series " << esc(s.css) << "\" points=\"" << run << "\"/>\n";
        run.clear();
        len = 0;
      };
      for (const XYPoint* pt : pts) {
        if (drawable(pt->y, ay)) {
          if (!run.empty()) run += ' ';
          run.append(c(X(pt->x))).append(",").append(c(Y(*pt->y)));
          ++len;
        } else {
          flush();
        }
      }
      flush();
    }
    for (const XYPoint* pt : pts) {
      if (!s.markers) continue;
      const std::string tip = (s.name.empty() ? "" : s.name + ": ") + format_number(pt->x) + ", " +
                              text_of_value(pt->y, "NaN") + (pt->label.empty() ? "" : " (" + pt->label + ")");
      if (!drawable(pt->y, ay)) {
        o << gap_mark(X(pt->x), f.bottom, tip);
        continue;
      }
      const double x = X(pt->x), y = Y(*pt->y);
      // A point's own class (its verdict) colours it over its series'.
      o << marker(ay, *pt->y, x, y, pt->css.empty() ? s.css : pt->css, 4, tip);
      if (!pt->label.empty()) o << place_label(x, y, pt->label);
    }
    o << "\n";
  }
  o << "</svg>\n";
  return o.str();
}

std::string heatmap(const Heatmap& m) {
  const size_t rows = m.cells.size();
  size_t cols = 0;
  for (const auto& r : m.cells) cols = std::max(cols, r.size());
  std::vector<double> vals;
  for (const auto& r : m.cells)
    for (const auto& v : r)
      if (v) vals.push_back(*v);
  if (m.lo) vals.push_back(*m.lo);
  if (m.hi) vals.push_back(*m.hi);
  const Axis axis = Axis::fit(vals, m.scale);

  const double x0 = 80, bar_w = 14, x1 = kWidth - 100, top = 30;
  const double cw = cols ? std::min(48.0, (x1 - x0) / static_cast<double>(cols)) : 1;
  const double ch = rows ? std::clamp(360.0 / static_cast<double>(rows), 3.0, 28.0) : 1;
  const double bottom = top + ch * static_cast<double>(rows), h = std::max(bottom, top + 172) + 58;
  const bool write_values = cols <= 16 && rows <= 32 && cw >= 34 && ch >= 14;
  // Cells too small for an outline: the rows and columns holding a hot cell
  // are marked beside the map instead.
  const bool dense = cw < 8 || ch < 8;
  std::vector<bool> hot_row(rows, false), hot_col(cols, false);

  std::ostringstream o;
  o << open_svg(kWidth, h, m.title, "heatmap");
  auto name = [](const std::vector<std::string>& names, size_t i) {
    return i < names.size() ? names[i] : std::to_string(i);
  };
  for (size_t r = 0; r < rows; ++r) {
    for (size_t k = 0; k < cols; ++k) {
      const double* cell = k < m.cells[r].size() && m.cells[r][k] ? &*m.cells[r][k] : nullptr;
      const std::optional<double> v = cell ? std::optional<double>(*cell) : std::nullopt;
      const double x = x0 + cw * static_cast<double>(k), y = top + ch * static_cast<double>(r);
      const std::string tip = m.row_label + " " + name(m.row_names, r) + ", " + m.col_label + " " +
                              name(m.col_names, k) + ": " + text_of_value(v, "undefined");
      const bool finite = cell && std::isfinite(*cell);
      const bool hot = finite && m.highlight_above && *cell > *m.highlight_above;
      if (hot) hot_row[r] = hot_col[k] = true;
      o << "<rect class=\"cell" << (dense ? " dense" : "") << (!v ? " undefined" : !finite ? " nonfinite" : "")
        << (hot && !dense ? " hot" : "")
        << "\" x=\"" << c(x) << "\" y=\"" << c(y) << "\" width=\"" << c(cw) << "\" height=\"" << c(ch) << "\"";
      if (finite) o << " fill=\"" << ramp(axis.frac(*cell)) << "\"";
      o << "><title>" << esc(tip) << "</title></rect>";
      if (write_values && cell)
        o << "<text class=\"cellvalue" << (finite && axis.frac(*cell) > 0.45 ? " light" : "") << "\" x=\""
          << c(x + cw / 2) << "\" y=\"" << c(y + ch / 2 + 4) << "\" text-anchor=\"middle\">"
          << esc(finite ? format_number(*cell, 2) : format_number(*cell)) << "</text>";
    }
    o << "\n";
  }
  if (dense) {
    for (size_t r = 0; r < rows; ++r)
      if (hot_row[r])
        o << "<rect class=\"hotmark\" x=\"" << c(x0 - 3) << "\" y=\"" << c(top + ch * static_cast<double>(r))
          << "\" width=\"3\" height=\"" << c(std::max(ch, 1.0)) << "\"/>";
    for (size_t k = 0; k < cols; ++k)
      if (hot_col[k])
        o << "<rect class=\"hotmark\" x=\"" << c(x0 + cw * static_cast<double>(k)) << "\" y=\"" << c(bottom)
          << "\" width=\"" << c(std::max(cw, 1.0)) << "\" height=\"3\"/>";
    o << "\n";
  }
  // Row and column names, thinned to about twenty of each.
  const size_t rstep = std::max<size_t>(1, (rows + 19) / 20), cstep = std::max<size_t>(1, (cols + 19) / 20);
  for (size_t r = 0; r < rows; r += rstep)
    o << "<text class=\"tick\" x=\"" << c(x0 - 6) << "\" y=\"" << c(top + ch * (static_cast<double>(r) + 0.5) + 4)
      << "\" text-anchor=\"end\">" << esc(name(m.row_names, r)) << "</text>";
  for (size_t k = 0; k < cols; k += cstep)
    o << "<text class=\"tick\" x=\"" << c(x0 + cw * (static_cast<double>(k) + 0.5)) << "\" y=\"" << c(bottom + 16)
      << "\" text-anchor=\"middle\">" << esc(name(m.col_names, k)) << "</text>";
  o << "\n<text class=\"note\" x=\"" << c(x0 + cw * static_cast<double>(cols) / 2) << "\" y=\"" << c(bottom + 32)
    << "\" text-anchor=\"middle\">" << esc(m.col_label) << "</text>";
  o << "<text class=\"note\" transform=\"translate(" << c(18) << "," << c((top + bottom) / 2) << ") rotate(-90)\""
    << " text-anchor=\"middle\">" << esc(m.row_label) << "</text>\n";

  // The colour bar, low at the bottom.
  const double bx = kWidth - 80, bt = top + 6, bb = top + 166;
  for (int i = 0; i < 32; ++i) {
    const double f0 = i / 32.0;
    o << "<rect class=\"bar\" x=\"" << c(bx) << "\" y=\"" << c(bb - (bb - bt) * (f0 + 1 / 32.0)) << "\" width=\""
      << c(bar_w) << "\" height=\"" << c((bb - bt) / 32 + 0.5) << "\" fill=\"" << ramp(f0 + 0.5 / 32) << "\"/>";
  }
  for (const auto& t : axis.ticks())
    o << "<text class=\"tick\" x=\"" << c(bx + bar_w + 4) << "\" y=\"" << c(bb - t.at * (bb - bt) + 4) << "\">"
      << esc(t.label) << "</text>";
  o << "\n<text class=\"note\" x=\"" << c(bx) << "\" y=\"" << c(bt - 14) << "\">" << esc(m.value_label) << "</text>";
  o << "<text class=\"note\" x=\"" << c(kWidth - 4) << "\" y=\"" << c(h - 6) << "\" text-anchor=\"end\">"
    << esc("colour: " + axis.note() +
           (m.highlight_above ? (dense ? "; marked beside the map: rows and columns with a cell above "
                                       : "; outlined: above ") +
                                    format_number(*m.highlight_above)
                              : std::string()))
    << "</text>\n</svg>\n";
  return o.str();
}

}  // namespace svg
}  // namespace ts
