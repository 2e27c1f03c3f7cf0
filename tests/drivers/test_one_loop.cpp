// One judge, one loop (README "Architecture", gates/README.md "One case, one
// loop"): repro lines are built by Case::repro alone. A driver that assembles a
// repro line of its own fails here, naming the file. That judge() is called
// from the loop alone the compiler checks (gates/verdict.hpp's JudgeKey, ctest
// judge_outside_the_loop).
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "catch.hpp"

namespace {

std::vector<std::pair<std::string, std::string>> sources() {
  std::vector<std::pair<std::string, std::string>> out;
  for (const char* dir : {"drivers", "tools", "gates", "kernels_under_test", "fixtures", "reference", "core", "python"})
    for (const auto& e : std::filesystem::recursive_directory_iterator(std::string(TOUCHSTONE_SOURCE_DIR) + "/" + dir)) {
      const std::string ext = e.path().extension().string();
      if (ext != ".cpp" && ext != ".hpp" && ext != ".cu" && ext != ".py") continue;
      std::ifstream in(e.path());
      std::stringstream ss;
      ss << in.rdbuf();
      out.emplace_back(std::filesystem::relative(e.path(), TOUCHSTONE_SOURCE_DIR).string(), ss.str());
    }
  return out;
}

}  // namespace

TEST_CASE("one loop: repro lines are built by drivers/case.cpp only (Case::repro, command_line)") {
  // A repro line built by hand: a string literal of a touchstone command that is
  // concatenated with more words ("touchstone gate --gate " + ...).
  const std::regex by_hand(R"re("touchstone (gate|triage|compare|sweep) [^"]*--[^"]*"\s*\+)re");
  std::vector<std::string> builders;
  for (const auto& [path, text] : sources())
    if (std::regex_search(text, by_hand)) builders.push_back(path);
  for (const auto& [path, text] : sources())
    if (path == "drivers/case.cpp") CHECK(text.find("std::string command_line(") != std::string::npos);
  for (const auto& b : builders) INFO(b);
  CHECK(builders.empty());
}
