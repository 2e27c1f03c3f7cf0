// One judge, one loop (README "Architecture", gates/README.md "One case, one
// loop"): judge() is called from drivers/run_cases.cpp alone, and repro lines
// are built by Case::repro alone. A driver that assembles evidence or a repro
// line of its own fails here, naming the file.
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

TEST_CASE("one loop: judge() is called from drivers/run_cases.cpp only") {
  const std::regex call(R"((^|[^_a-zA-Z0-9])judge\s*\()");
  std::vector<std::string> callers;
  for (const auto& [path, text] : sources()) {
    if (path.rfind("gates/verdict.", 0) == 0) continue;  // where it is defined
    std::istringstream lines(text);
    std::string line;
    while (std::getline(lines, line)) {
      const auto c = line.find("//");
      const std::string code = c == std::string::npos ? line : line.substr(0, c);
      if (std::regex_search(code, call)) callers.push_back(path);
    }
  }
  INFO("judge() called from:");
  for (const auto& c : callers) INFO(c);
  REQUIRE(callers.size() == 1);
  CHECK(callers[0] == "drivers/run_cases.cpp");
}

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
