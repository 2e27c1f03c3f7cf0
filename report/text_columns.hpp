#pragma once
// A table for a terminal whose columns stay under their headers at any width: each column as
// wide as its widest cell, two spaces apart, one where that is what fits; where even that is too
// wide, the columns go into bands of lines that each fit, every record (and the header) printed
// band after band, so a narrow terminal still reads aligned columns and nothing is cut.
#include <cstddef>
#include <string>
#include <vector>

namespace ts {

struct TextColumn {
  std::string header;
  bool right = false;  // numbers: aligned on their last digit
};

// One line per record and band, each ending in "\n", each at most `width` columns where every
// column fits on its own (a cell wider than a whole line is left long rather than cut).
std::string aligned_columns(const std::vector<TextColumn>& columns, const std::vector<std::vector<std::string>>& rows,
                            size_t width, size_t indent);

}  // namespace ts
