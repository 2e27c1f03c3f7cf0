#pragma once
// A heatmap as inline SVG for the triage page: one rect per cell, its value
// in a <title> (hover) and, when the cells are wide enough, as text. Cells
// without a figure (null) are hatched grey; NaN or infinite ones are black
// and named in the caption.
#include <cmath>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>

namespace ts {

// log: log10 colour scale between the smallest positive and the largest
// finite value (0 drawn at the floor, stated). around_one: a diverging scale
// centred on 1 (gain), symmetric in |v - 1|.
enum class HeatScale { log, around_one };

// The colour scale of maps drawn side by side to be compared (a candidate's
// and the baseline's, the floor): one scale over all of them, so that one
// colour is one figure on the page; each map on a scale of its own would show
// the floor's worst cell as red as the candidate's. `shared_by` names them in
// the caption.
struct HeatRange {
  HeatScale scale;
  std::string shared_by;
  double lo = HUGE_VAL, hi = -HUGE_VAL, dev = 0;  // log: the smallest positive and largest finite figure
  HeatRange(HeatScale s, std::string shared) : scale(s), shared_by(std::move(shared)) {}
  // Widens the range to a map's values (as heatmap_svg takes them).
  void add(const nlohmann::json& values);
};

// rows, cols: arrays of labels; values: rows x cols array of arrays (numbers,
// null, or "NaN"/"Infinity" strings as the reports write them), coloured on
// `range` (which has been given these values).
std::string heatmap_svg(const std::string& title, const std::string& row_axis, const std::string& col_axis,
                        const nlohmann::json& rows, const nlohmann::json& cols, const nlohmann::json& values,
                        const HeatRange& range);

}  // namespace ts
