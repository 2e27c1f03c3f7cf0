#include "report/triage_heatmap.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "report/markup.hpp"

namespace ts {
namespace {

std::string hm_g4(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.4g", v);
  return b;
}

// White -> dark red for t in [0, 1].
std::string hm_ramp(double t) {
  t = std::clamp(t, 0.0, 1.0);
  const int r = int(255 - 75 * t), g = int(255 - 235 * t), b = int(255 - 225 * t);
  char s[16];
  std::snprintf(s, sizeof s, "#%02x%02x%02x", r, g, b);
  return s;
}
// Blue below 1, red above, white at 1.
std::string hm_diverging(double t) {
  t = std::clamp(t, -1.0, 1.0);
  const double a = std::fabs(t);
  int r, g, b;
  if (t >= 0) r = 255, g = int(255 - 200 * a), b = int(255 - 200 * a);
  else r = int(255 - 200 * a), g = int(255 - 130 * a), b = 255;
  char s[16];
  std::snprintf(s, sizeof s, "#%02x%02x%02x", r, g, b);
  return s;
}

// A column's index under the cells: its number, or its label when it has
// none (the conditioning tokens' column reads "cond", not frame F).
std::string hm_tick(const std::string& label, size_t k) {
  return label.find_first_of("0123456789") == std::string::npos ? label : std::to_string(k);
}

}  // namespace

void HeatRange::add(const nlohmann::json& values) {
  for (const auto& row : values)
    for (const auto& v : row) {
      if (!v.is_number()) continue;
      const double x = v.get<double>();
      if (scale == HeatScale::log) {
        if (x > 0) lo = std::min(lo, x);
        hi = std::max(hi, x);
      } else {
        dev = std::max(dev, std::fabs(x - 1));
      }
    }
}

std::string heatmap_svg(const std::string& title, const std::string& row_axis, const std::string& col_axis,
                        const nlohmann::json& rows, const nlohmann::json& cols, const nlohmann::json& values,
                        const HeatRange& range) {
  const HeatScale scale = range.scale;
  const size_t R = rows.size(), C = cols.size();
  double lo = range.lo, hi = range.hi;
  const double dev = range.dev;
  int bad = 0;
  for (const auto& row : values)
    for (const auto& v : row) bad += v.is_string();
  if (!(lo < HUGE_VAL)) lo = hi > 0 ? hi : 1;
  if (!(hi > 0)) hi = lo;
  const double llo = std::log10(lo), lhi = std::log10(hi);
  const int cw = int(std::clamp(760.0 / double(std::max<size_t>(C, 1)), 10.0, 60.0)), ch = R > 24 ? 14 : 22;
  const std::string axis_text = col_axis + " (" + std::to_string(C) + " columns, left to right; rows: " + row_axis + ")";
  // Wide enough for the title and the axis line too (a map of few columns cut them short).
  const int left = 150, top = 30, height = top + int(R) * ch + 50;
  const int width = std::max({left + int(C) * cw + 20, 12 + int(title.size()) * 8, left + int(axis_text.size()) * 6 + 20});
  std::ostringstream o;
  o << "<figure><svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width << "\" height=\"" << height
    << "\" role=\"img\" aria-label=\"" << markup_escape(title) << "\" class=\"heatmap\">\n";
  o << "<text x=\"4\" y=\"16\" font-size=\"13\" font-weight=\"bold\">" << markup_escape(title) << "</text>\n";
  for (size_t i = 0; i < R; ++i) {
    o << "<text x=\"" << left - 4 << "\" y=\"" << top + int(i) * ch + ch * 0.7 << "\" font-size=\"10\" text-anchor=\"end\">"
      << markup_escape(rows[i].get<std::string>()) << "</text>\n";
    for (size_t k = 0; k < C; ++k) {
      const auto& v = values[i][k];
      std::string fill = "#dddddd", label;
      if (v.is_number()) {
        const double x = v.get<double>();
        label = hm_g4(x);
        if (scale == HeatScale::log) fill = hm_ramp(x > 0 && lhi > llo ? (std::log10(x) - llo) / (lhi - llo) : x > 0 ? 1.0 : 0.0);
        else fill = hm_diverging(dev > 0 ? (x - 1) / dev : 0.0);
      } else if (v.is_string()) {
        fill = "#000000";
        label = v.get<std::string>();
      } else {
        label = "undefined";
      }
      o << "<rect class=\"cell\" x=\"" << left + int(k) * cw << "\" y=\"" << top + int(i) * ch << "\" width=\"" << cw - 1
        << "\" height=\"" << ch - 1 << "\" fill=\"" << fill << "\"><title>" << markup_escape(rows[i].get<std::string>())
        << ", " << markup_escape(cols[k].get<std::string>()) << ": " << markup_escape(label) << "</title></rect>\n";
      if (cw >= 40 && ch >= 20)
        o << "<text x=\"" << left + int(k) * cw + cw / 2 << "\" y=\"" << top + int(i) * ch + ch * 0.68
          << "\" font-size=\"9\" text-anchor=\"middle\">" << markup_escape(label) << "</text>\n";
    }
  }
  // Column indices under the cells (every k-th where they would overlap); full labels are in each cell's title.
  const size_t every = cw >= 14 ? 1 : size_t(14 / cw + 1);
  for (size_t k = 0; k < C; ++k) {
    const std::string tick = hm_tick(cols[k].get<std::string>(), k);
    if (k % every != 0 && tick == std::to_string(k)) continue;
    o << "<text x=\"" << left + int(k) * cw + cw / 2 << "\" y=\"" << top + int(R) * ch + 11
      << "\" font-size=\"9\" text-anchor=\"middle\">" << markup_escape(tick) << "</text>\n";
  }
  o << "<text x=\"" << left << "\" y=\"" << top + int(R) * ch + 26 << "\" font-size=\"11\">" << markup_escape(axis_text)
    << "</text>\n";
  o << "</svg><figcaption>";
  if (scale == HeatScale::log)
    o << "colour: log10 from " << hm_g4(lo) << " (white) to " << hm_g4(hi) << " (dark red); 0 is drawn at the floor";
  else
    o << "colour: gain, white at 1, red above, blue below, full colour at |gain - 1| = " << hm_g4(dev);
  if (!range.shared_by.empty()) o << "; one scale for " << markup_escape(range.shared_by);
  if (bad) o << "; " << bad << " cell(s) NaN or infinite (black)";
  o << "; grey: undefined.</figcaption></figure>\n";
  return o.str();
}

}  // namespace ts
