// End to end: reports on a terminal or in a CI log fit the width they have (COLUMNS, else the
// terminal's, else 100 columns off a terminal), each candidate of a many-rule gate in a block of
// its own, and say each finding once.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <nlohmann/json.hpp>

#include "catch.hpp"
#include "cli_runner.hpp"
#include "text_lines.hpp"

namespace fs = std::filesystem;

namespace {

using ts::test::CliResult;
CliResult cli(const std::string& args) { return ts::test::run_cli(args); }
const std::string& dir() { return ts::test::scratch_dir(); }

using ts::test::widest;

// A tiny fixture with the exact output stored (stored:exact exists).
const std::string& tiny() {
  static const std::string f = [] {
    const std::string p = dir() + "/terminal_tiny.h5";
    REQUIRE(cli("fixture synth --preset tiny --seed 3 -o " + p).code == 0);
    REQUIRE(cli("reference " + p + " --backend exact").code == 0);
    return p;
  }();
  return f;
}

// The environment of the CLI runs: COLUMNS as given (unset for nullptr).
struct Columns {
  std::string saved;
  bool had;
  explicit Columns(const char* v) : had(std::getenv("COLUMNS") != nullptr) {
    if (had) saved = std::getenv("COLUMNS");
    if (v) ::setenv("COLUMNS", v, 1);
    else ::unsetenv("COLUMNS");
  }
  ~Columns() {
    if (had) ::setenv("COLUMNS", saved.c_str(), 1);
    else ::unsetenv("COLUMNS");
  }
};

}  // namespace

TEST_CASE("terminal report: sage_compat on ci with four candidates fits 100 columns off a terminal") {
  const std::string f = dir() + "/terminal_ci.h5";
  REQUIRE(cli("fixture synth --preset ci --seed 1 -o " + f).code == 0);
  const std::string run = "gate --gate sage_compat --fixture " + f +
                          " --candidate exact --candidate exact:precision=fp32 --candidate sage2:preset=sm90"
                          " --candidate sol:tau=1.3 --pairs 3 --warmup 0 --rotate 1";
  {
    const Columns unset(nullptr);  // stdout is a file here: 100 columns
    const CliResult r = cli(run);
    INFO(r.out << r.err);
    CHECK(r.code == 1);  // sol:tau=1.3 is not Sage-like
    CHECK(widest(r.out) <= 100);
    CHECK(widest(r.out) > 60);  // it used the width it had
    for (const char* c : {"exact\n", "exact:precision=fp32\n", "sage2:preset=sm90\n", "sol:tau=1.3\n"})
      CHECK(r.out.find(std::string(" ") + c) != std::string::npos);  // each candidate heads its block
    CHECK(r.out.find("REJECT sol:tau=1.3\n") != std::string::npos);
    CHECK(r.out.find("sage_like [fail]:") != std::string::npos);
    CHECK(r.out.find("summary: ") != std::string::npos);
  }
  {
    const Columns narrow("72");
    const CliResult r = cli(run);
    CHECK(widest(r.out) <= 72);
    CHECK(r.out.find("REJECT sol:tau=1.3\n") != std::string::npos);
  }
}

TEST_CASE("terminal report: a sweep says its emulated rows were not timed, and fits 100 columns") {
  const Columns unset(nullptr);
  const auto r = cli("sweep " + tiny() + " --tau 1.3 --gate sparse_acceptance --pairs 3");
  INFO(r.out << r.err);
  CHECK(r.code == 1);
  CHECK(r.out.find("computed rows\n    not timed: the rows are an emulation") != std::string::npos);
  CHECK(r.out.find("timed in 3 pairs") == std::string::npos);
  CHECK(widest(r.out) <= 100);
}

TEST_CASE("terminal report: a NaN in the candidate is reported once, the rules it fails named in one line") {
  const std::string f = dir() + "/terminal_nan.h5";
  REQUIRE(cli("fixture synth --preset tiny --seed 6 -o " + f).code == 0);
  const std::string py = "PYTHONPATH=" + std::string(TOUCHSTONE_SOURCE_DIR) + "/python /usr/bin/python3 -c \""
                         "import sys, numpy as np, touchstone as t; fx = t.read_fixture(sys.argv[1]); "
                         "out = np.asarray(fx.q, dtype=np.float32).copy(); out[5, 0, 3] = np.nan; "
                         "t.add_output(sys.argv[1], 'nanny', out)\" " + f;
  if (std::system(py.c_str()) != 0) {
    WARN("skipped: no /usr/bin/python3 with numpy and h5py to store a NaN output");
    return;
  }
  const Columns unset(nullptr);
  const CliResult r = cli("gate --gate sage_compat --fixture " + f + " --candidate stored:nanny");
  INFO(r.out << r.err);
  CHECK(r.code == 1);
  CHECK(r.out.find("REJECT stored:nanny\n") != std::string::npos);
  size_t said = 0;
  for (size_t at = r.out.find("non-finite values"); at != std::string::npos; at = r.out.find("non-finite values", at + 1))
    ++said;
  CHECK(said == 2);  // the rules' line and finite_guard's count
  CHECK(r.out.find("  sage_like, direction, vs_exact, ") != std::string::npos);
  CHECK(r.out.find("finite_guard [fail]: 1 non-finite values in the candidate (NaN never passes)") != std::string::npos);
  CHECK(widest(r.out) <= 100);
  // The Markdown report says it once too (it repeated it for each of seven rules).
  const std::string md_path = dir() + "/terminal_nan.md";
  const CliResult m = cli("gate --gate sage_compat --fixture " + f + " --candidate stored:nanny --markdown " + md_path);
  INFO(m.err);
  CHECK(m.code == 1);
  const std::string md = ts::test::read_file(md_path);
  INFO(md);
  size_t in_md = 0;
  for (size_t at = md.find("non-finite values"); at != std::string::npos; at = md.find("non-finite values", at + 1))
    ++in_md;
  CHECK(in_md == 2);
  CHECK(md.find("sage_like, direction, vs_exact, ") != std::string::npos);
  // JUnit (a test case a rule) and the HTML rules table point the seven rules to finite_guard,
  // which alone gives the count (JUnit: its failure's message and body).
  const std::string xml_path = dir() + "/terminal_nan.xml", html_path = dir() + "/terminal_nan.html",
                    json_path = dir() + "/terminal_nan.json";
  const CliResult all = cli("gate --gate sage_compat --fixture " + f + " --candidate stored:nanny --junit " + xml_path +
                            " --html " + html_path + " --json " + json_path);
  CHECK(all.code == 1);
  const auto mentions = [](const std::string& text, const std::string& what) {
    size_t n = 0;
    for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
    return n;
  };
  const std::string xml = ts::test::read_file(xml_path), html = ts::test::read_file(html_path);
  CHECK(mentions(xml, "non-finite values") == 2);
  CHECK(mentions(xml, "message=\"NaN/Inf in the candidate: see finite_guard\"") == 7);
  CHECK(mentions(html, "non-finite values") == 1);
  CHECK(mentions(html, "<td>NaN/Inf in the candidate: see finite_guard</td>") == 7);
  // Its figures read NaN, the direction (cosine) too, never missing (JSON: the string "NaN").
  const auto j = nlohmann::json::parse(ts::test::read_file(json_path));
  size_t nan_figures = 0;
  for (const auto& rule : j["candidates"][0]["rules"]) {
    if (rule["metric"] == "speedup" || rule.value("builtin", false)) continue;
    INFO(rule.dump());
    CHECK(rule["figure"] == "NaN");
    ++nan_figures;
  }
  CHECK(nan_figures == 7);
  CHECK(html.find("<td class=\"num gapcell\">missing</td><td>&gt;= 0.999</td>") == std::string::npos);
}

TEST_CASE("terminal report: triage's text fits 100 columns off a terminal, its commands still one shell line each") {
  const std::string f = dir() + "/terminal_triage.h5";
  REQUIRE(cli("fixture synth --preset tiny --seed 4 -o " + f).code == 0);
  const CliResult r = cli("triage " + f + " --candidate sol:tau=1.3");
  INFO(r.out << r.err);
  REQUIRE(r.code == 0);
  for (size_t a = 0, b; (b = r.out.find('\n', a)) != std::string::npos; a = b + 1) CHECK(b - a <= 100);
  // A wrapped command ends its broken lines with a backslash.
  const size_t slice = r.out.find("slice: ");
  REQUIRE(slice != std::string::npos);
  const std::string rest = r.out.substr(slice, r.out.find('\n', slice) - slice);
  if (rest.size() >= 99) CHECK(rest.back() == '\\');
}
