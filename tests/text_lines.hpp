#pragma once
// A command's text output read line by line: what the terminal-width and wording tests check.
#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

namespace ts::test {

inline std::vector<std::string> lines_of(const std::string& s) {
  std::vector<std::string> v;
  std::istringstream in(s);
  for (std::string l; std::getline(in, l);) v.push_back(l);
  return v;
}

// The longest line's length.
inline size_t widest(const std::string& s) {
  size_t w = 0;
  for (const auto& l : lines_of(s)) w = std::max(w, l.size());
  return w;
}

}  // namespace ts::test
