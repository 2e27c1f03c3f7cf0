#pragma once
// The code lines of the Python package's sources (python/touchstone/*.py), comments and
// docstrings (any triple-quoted string) left out: prose may name a stage or a preset, code
// may not keep a list of them. Read by the table tests (tests/core/test_stage_table.cpp,
// tests/reference/test_sage2_presets.cpp), so that "tables, not copies" holds for Python too.
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace ts_test {

struct CodeLine {
  std::string where, text;  // "python/touchstone/x.py:12", the line
};

// Code lines of one Python text, `name` naming it in `where`.
inline std::vector<CodeLine> python_code_lines(std::istream& in, const std::string& name) {
  std::vector<CodeLine> out;
  std::string line;
  bool in_triple = false;
  for (int n = 1; std::getline(in, line); ++n) {
    std::string code;
    size_t i = 0;
    // Triple quotes toggle prose; what lies outside them on the line is code.
    while (i < line.size()) {
      const size_t t = line.find("\"\"\"", i);
      const size_t end = t == std::string::npos ? line.size() : t;
      if (!in_triple) code += line.substr(i, end - i);
      if (t == std::string::npos) break;
      in_triple = !in_triple;
      i = t + 3;
    }
    const auto hash = code.find('#');
    if (hash != std::string::npos) code.erase(hash);
    if (code.find_first_not_of(" \t") != std::string::npos) out.push_back({name + ":" + std::to_string(n), code});
  }
  return out;
}

inline std::vector<CodeLine> python_package_code_lines(const std::filesystem::path& root, int* files) {
  std::vector<CodeLine> out;
  *files = 0;
  for (const auto& e : std::filesystem::recursive_directory_iterator(root / "python" / "touchstone")) {
    if (!e.is_regular_file() || e.path().extension() != ".py") continue;
    ++*files;
    std::ifstream in(e.path());
    auto lines = python_code_lines(in, std::filesystem::relative(e.path(), root).string());
    out.insert(out.end(), lines.begin(), lines.end());
  }
  return out;
}

}  // namespace ts_test
