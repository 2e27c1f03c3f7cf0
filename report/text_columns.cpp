#include "report/text_columns.hpp"

#include <algorithm>

namespace ts {
namespace {

std::string cell(const std::string& s, size_t w, bool right) {
  const std::string fill(w > s.size() ? w - s.size() : 0, ' ');
  return right ? fill + s : s + fill;
}

}  // namespace

std::string aligned_columns(const std::vector<TextColumn>& columns, const std::vector<std::vector<std::string>>& rows,
                            size_t width, size_t indent) {
  const size_t n = columns.size();
  std::vector<size_t> w(n);
  for (size_t c = 0; c < n; ++c) {
    w[c] = columns[c].header.size();
    for (const auto& r : rows)
      if (c < r.size()) w[c] = std::max(w[c], r[c].size());
  }
  const auto span = [&](size_t from, size_t to, size_t gap) {
    size_t s = 0;
    for (size_t c = from; c < to; ++c) s += w[c] + (c > from ? gap : 0);
    return s;
  };
  size_t gap = 2;
  if (indent + span(0, n, gap) > width) gap = 1;
  // Bands: as many columns as fit on a line; a band after the first is indented 4 more, so a
  // record's continuation reads as one.
  std::vector<std::pair<size_t, size_t>> bands;
  for (size_t from = 0; from < n;) {
    const size_t lead = indent + (bands.empty() ? 0 : 4);
    size_t to = from + 1;
    while (to < n && lead + span(from, to + 1, gap) <= width) ++to;
    bands.push_back({from, to});
    from = to;
  }
  std::string out;
  const auto emit = [&](const auto& text_of) {
    for (size_t b = 0; b < bands.size(); ++b) {
      std::string line(indent + (b ? 4 : 0), ' ');
      for (size_t c = bands[b].first; c < bands[b].second; ++c) {
        if (c > bands[b].first) line += std::string(gap, ' ');
        line += cell(text_of(c), w[c], columns[c].right);
      }
      while (!line.empty() && line.back() == ' ') line.pop_back();
      out += line + "\n";
    }
  };
  emit([&](size_t c) -> const std::string& { return columns[c].header; });
  static const std::string none;
  for (const auto& r : rows) emit([&](size_t c) -> const std::string& { return c < r.size() ? r[c] : none; });
  return out;
}

}  // namespace ts
