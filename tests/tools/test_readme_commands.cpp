// The README's two commands compose in one clone: command 1
// builds only the CLI into build/ with CMake's default generator; scripts/ci
// (command 2) configures folders of its own, so it never meets build/ under
// another generator ("generator: Ninja does not match ... Unix Makefiles").
#include <regex>
#include <sstream>
#include <set>
#include <string>

#include "catch.hpp"
#include "cli_runner.hpp"

namespace {
const std::string kRoot = TOUCHSTONE_SOURCE_DIR;
}  // namespace

TEST_CASE("README command 1 builds the CLI alone into build/, and scripts/ci never touches build/") {
  const std::string readme = ts::test::read_file(kRoot + "/README.md");
  const size_t at = readme.find("scripts/install-deps && cmake -S . -B build ");
  REQUIRE(at != std::string::npos);
  const std::string cmd1 = readme.substr(at, readme.find('\n', at) - at);
  CHECK(cmd1.find("cmake --build build --target touchstone") != std::string::npos);
  CHECK(cmd1.find("./build/touchstone demo") != std::string::npos);
  // Its commands, without the comments (which may name build/ to say why not).
  std::string ci;
  {
    std::istringstream in(ts::test::read_file(kRoot + "/scripts/ci"));
    for (std::string line; std::getline(in, line);) {
      const size_t text = line.find_first_not_of(' ');
      if (text != std::string::npos && line[text] != '#') ci += line + "\n";
    }
  }
  // Every folder scripts/ci configures, builds, tests or runs from.
  std::set<std::string> dirs;
  const std::regex use(R"((?:-B|--build|--test-dir)\s+([A-Za-z0-9_./-]+))");
  for (auto it = std::sregex_iterator(ci.begin(), ci.end(), use); it != std::sregex_iterator(); ++it)
    dirs.insert((*it)[1]);
  CHECK(dirs == std::set<std::string>{"build-ci", "build-sanitize"});
  CHECK(ci.find(" build/") == std::string::npos);
  // Both are ignored by git (the clone stays clean after either command).
  const std::string ignore = ts::test::read_file(kRoot + "/.gitignore");
  CHECK(ignore.find("/build*/") != std::string::npos);
}
