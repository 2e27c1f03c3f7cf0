#pragma once
// A heatmap as inline SVG for the triage page: one rect per cell, its value
// in a <title> (hover) and, when the cells are wide enough, as text. Cells
// without a figure (null) are hatched grey; NaN or infinite ones are black
// and named in the caption.
#include <nlohmann/json.hpp>
#include <string>

namespace ts {

// log: log10 colour scale between the smallest positive and the largest
// finite value (0 drawn at the floor, stated). around_one: a diverging scale
// centred on 1 (gain), symmetric in |v - 1|.
enum class HeatScale { log, around_one };

// rows, cols: arrays of labels; values: rows x cols array of arrays (numbers,
// null, or "NaN"/"Infinity" strings as the reports write them).
std::string heatmap_svg(const std::string& title, const std::string& row_axis, const std::string& col_axis,
                        const nlohmann::json& rows, const nlohmann::json& cols, const nlohmann::json& values,
                        HeatScale scale);

}  // namespace ts
