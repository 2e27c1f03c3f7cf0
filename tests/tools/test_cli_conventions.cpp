// End to end: what every command does alike. --help names no source file, fits 100 columns off a
// terminal and gives an example; --json alone or with - writes to stdout, with a path to a file.
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "catch.hpp"
#include "cli_runner.hpp"

namespace {

using Result = ts::test::CliResult;
const std::string& scratch() { return ts::test::scratch_dir(); }
Result cli(const std::string& args) { return ts::test::run_cli(args); }

// A fixture as a user makes one (with /attention/observed).
std::string synth(const std::string& name, const std::string& preset, bool block) {
  const std::string p = scratch() + "/" + name + ".h5";
  const Result r = cli("fixture synth --preset " + preset + " --seed 3 " + (block ? "--with-block " : "") + "-o " + p);
  REQUIRE(r.code == 0);
  return p;
}

}  // namespace

TEST_CASE("cli conventions: --help everywhere names no source file and gives an example", "[cli]") {
  std::vector<std::string> todo = {""}, seen;
  while (!todo.empty()) {
    const std::string cmd = todo.back();
    todo.pop_back();
    const Result r = cli(cmd + " --help");
    INFO("touchstone " << cmd << " --help");
    CHECK(r.code == 0);
    CHECK(r.out.find(".cpp") == std::string::npos);
    CHECK(r.out.find(".hpp") == std::string::npos);
    // Off a terminal (COLUMNS unset in CI), help fits 100 columns: descriptions wrapped.
    {
      std::istringstream lines(r.out);
      for (std::string l; std::getline(lines, l);) {
        INFO(l);
        CHECK(l.size() <= 100);
      }
    }
    // Subcommands are listed after "Subcommands:", one per line.
    const auto at = r.out.find("Subcommands:");
    if (at != std::string::npos) {
      std::istringstream in(r.out.substr(at));
      std::string line;
      std::getline(in, line);
      while (std::getline(in, line) && !line.empty()) {
        if (line.find_first_not_of(' ') > 2) continue;  // a wrapped description's continuation
        std::istringstream w(line);
        std::string name;
        w >> name;
        if (!name.empty()) todo.push_back(cmd.empty() ? name : cmd + " " + name);
      }
    } else {
      seen.push_back(cmd);
      CHECK(r.out.find("Example:") != std::string::npos);
    }
  }
  CHECK(seen.size() >= 10);
}

TEST_CASE("cli conventions: --json means stdout alone or with -, a file with a path", "[cli]") {
  const std::string f = synth("json_forms", "tiny", true);
  const Result a = cli("compare " + f + " observed observed --json");
  const Result b = cli("compare " + f + " observed observed --json -");
  CHECK(a.code == 0);
  CHECK(a.out == b.out);
  CHECK(nlohmann::json::parse(a.out)["metrics"].is_object());
  const std::string p = scratch() + "/cmp.json";
  const Result c = cli("compare " + f + " observed observed --json " + p);
  CHECK(c.code == 0);
  CHECK(nlohmann::json::parse(ts::test::read_file(p)) == nlohmann::json::parse(a.out));
  CHECK(c.out.find("rel_l2") != std::string::npos);  // the text still goes to stdout
  const Result s = cli("fixture validate " + f + " --json");
  CHECK(s.code == 0);
  CHECK(nlohmann::json::parse(s.out).is_object());
}
