// End-to-end: --html on touchstone gate and touchstone compare writes a
// standalone page; a path that cannot be written is exit 2 with one stderr
// line, and leaves neither the file nor a temporary behind.
#include <filesystem>
#include <string>

#include "catch.hpp"
#include "cli_runner.hpp"

namespace fs = std::filesystem;

namespace {

using ts::test::CliResult;
using ts::test::read_file;
using ts::test::run_cli;

int lines(const std::string& s) {
  int n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

int count(const std::string& s, const std::string& sub) {
  int n = 0;
  for (size_t p = s.find(sub); p != std::string::npos; p = s.find(sub, p + 1)) ++n;
  return n;
}

// Another test may have emptied the shared scratch folder before this one.
std::string scratch() {
  fs::create_directories(ts::test::scratch_dir());
  return ts::test::scratch_dir();
}

// Nothing named after `name` (the file or its .NAME.tmp.PID temporary) in `dir`.
bool no_trace(const std::string& dir, const std::string& name) {
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string f = e.path().filename().string();
    if (f == name || f.rfind("." + name + ".tmp", 0) == 0) return false;
  }
  return true;
}

const std::string kSeed = std::string(TOUCHSTONE_SOURCE_DIR) + "/tests/gates/data/gb10_sage2_vs_sol_block24.json";

}  // namespace

TEST_CASE("html CLI: touchstone gate --html writes the page; an unwritable path is exit 2", "[cli][html]") {
  const std::string dir = scratch() + "/html_gate";
  fs::create_directories(dir);
  const std::string m = dir + "/seed.measurements.json";
  REQUIRE(run_cli("import-report " + kSeed + " -o " + m).code == 0);

  const std::string page = dir + "/gate.html";
  CliResult r = run_cli("gate --gate sparse_acceptance --measurements " + m + " --html " + page);
  CHECK(r.code == 1);  // the seed's candidates are not accepted
  CHECK(r.err.empty());
  REQUIRE(fs::exists(page));
  const std::string h = read_file(page);
  CHECK(h.rfind("<!DOCTYPE html>", 0) == 0);
  CHECK(h.find("</html>") != std::string::npos);
  for (const char* c : {"sol_bf16_tau_1_3", "sol_int8_qk_tau_1_3", "sol_fully_dense_tau_minus_100",
                        "sol_int8_qk_pv_tau_1_3"})
    CHECK(h.find(std::string("<code>") + c + "</code>") != std::string::npos);
  CHECK(count(h, "<svg ") == 2);
  CHECK(count(h, "<svg ") == count(h, "</svg>"));
  CHECK(r.out.find("summary: 0 accepted") != std::string::npos);

  // The folder does not exist: nothing can be written.
  const std::string absent = dir + "/no/such/folder/gate.html";
  r = run_cli("gate --gate sparse_acceptance --measurements " + m + " --html " + absent);
  CHECK(r.code == 2);
  CHECK(lines(r.err) == 1);
  CHECK(r.err.find("no folder") != std::string::npos);
  CHECK(r.err.find("gate.html") != std::string::npos);
  CHECK_FALSE(fs::exists(absent));
  CHECK_FALSE(fs::exists(dir + "/no"));

  // The folder exists but the target is a folder: the temporary is written,
  // the rename fails, and the temporary is removed again.
  fs::create_directories(dir + "/taken.html");
  r = run_cli("gate --gate sparse_acceptance --measurements " + m + " --html " + dir + "/taken.html");
  CHECK(r.code == 2);
  CHECK(lines(r.err) == 1);
  CHECK(fs::is_directory(dir + "/taken.html"));
  CHECK(fs::is_empty(dir + "/taken.html"));
  for (const auto& e : fs::directory_iterator(dir))
    CHECK(e.path().filename().string().rfind(".taken.html.tmp", 0) != 0);
  fs::remove_all(dir);
}

TEST_CASE("html CLI: touchstone compare --html plots rel_l2 per head, query block and frame", "[cli][html]") {
  const std::string dir = scratch() + "/html_compare";
  fs::create_directories(dir);
  const std::string f = dir + "/tiny.h5";
  REQUIRE(run_cli("fixture synth --force --preset tiny --seed 5 -o " + f).code == 0);
  REQUIRE(run_cli("reference " + f + " --backend exact").code == 0);
  REQUIRE(run_cli("reference " + f + " --backend sage2 --preset sm121").code == 0);

  const std::string page = dir + "/compare.html";
  CliResult r = run_cli("compare " + f + " sage2_sm121 exact --html " + page);
  CHECK(r.code == 0);
  CHECK(r.err.empty());
  CHECK(r.out.find("rel_l2") != std::string::npos);
  // The terminal output stays as it was without --breakdown.
  CHECK(r.out.find("worst heads") == std::string::npos);
  REQUIRE(fs::exists(page));
  const std::string h = read_file(page);
  CHECK(h.rfind("<!DOCTYPE html>", 0) == 0);
  CHECK(h.find("/outputs/sage2_sm121/attention") != std::string::npos);
  CHECK(h.find("rel_l2 per head") != std::string::npos);
  CHECK(h.find("rel_l2 per 128-token query block") != std::string::npos);
  CHECK(h.find("rel_l2 per latent frame") != std::string::npos);
  CHECK(count(h, "<svg ") == 4);  // and |gain - 1| per head
  CHECK(count(h, "<svg ") == count(h, "</svg>"));
  CHECK(count(h, "<circle class=\"dot group") > 0);  // groups as points
  CHECK(h.find("<polyline") == std::string::npos);   // never joined

  // --noise-floor: the baseline's own figure per group; a bad name exit 2 before any page.
  const std::string page3 = dir + "/compare3.html";
  r = run_cli("compare " + f + " sage2_sm121 exact --noise-floor sage2_sm121 --html " + page3);
  CHECK(r.code == 0);
  CHECK(count(read_file(page3), "class=\"noisefloor\"") > 0);
  r = run_cli("compare " + f + " sage2_sm121 exact --noise-floor nope --html " + dir + "/compare4.html");
  CHECK(r.code == 2);
  CHECK(lines(r.err) == 1);
  CHECK_FALSE(fs::exists(dir + "/compare4.html"));
  r = run_cli("compare " + f + " sage2_sm121 exact --noise-floor sage2_sm121");
  CHECK(r.code == 2);

  // --html beside --breakdown --json: the page and the JSON both.
  const std::string page2 = dir + "/compare2.html";
  r = run_cli("compare " + f + " sage2_sm121 exact --breakdown --json --html " + page2);
  CHECK(r.code == 0);
  CHECK(r.out.find("\"breakdown\"") != std::string::npos);
  CHECK(read_file(page2).rfind("<!DOCTYPE html>", 0) == 0);

  // Unwritable: exit 2, one line, no file and no temporary.
  r = run_cli("compare " + f + " sage2_sm121 exact --html " + dir + "/missing/compare.html");
  CHECK(r.code == 2);
  CHECK(lines(r.err) == 1);
  CHECK(r.err.find("no folder") != std::string::npos);
  CHECK(r.err.find("compare.html") != std::string::npos);
  CHECK_FALSE(fs::exists(dir + "/missing"));
  fs::create_directories(dir + "/busy.html");
  r = run_cli("compare " + f + " sage2_sm121 exact --html " + dir + "/busy.html");
  CHECK(r.code == 2);
  CHECK(lines(r.err) == 1);
  CHECK(fs::is_empty(dir + "/busy.html"));
  for (const auto& e : fs::directory_iterator(dir))
    CHECK(e.path().filename().string().rfind(".busy.html.tmp", 0) != 0);
  // --html belongs to a two-tensor comparison.
  r = run_cli("compare " + f + " a b --stages --html " + dir + "/stages.html");
  CHECK(r.code == 2);
  CHECK(lines(r.err) == 1);
  CHECK(no_trace(dir, "stages.html"));
  fs::remove_all(dir);
}
