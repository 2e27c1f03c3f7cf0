// Report renderings: terminal table, JSON, JUnit (well-formed, one failure
// per failed rule), Markdown, and atomic writes.
#include <cstdio>
#include <cstdlib>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "catch.hpp"
#include "core/error.hpp"
#include "core/write_file.hpp"
#include "report/gate_report.hpp"
#include "gates/seed_support.hpp"
#include "text_lines.hpp"

using namespace ts;

namespace {
std::string tmpdir() {
  auto d = std::filesystem::temp_directory_path() / ("ts_gates_reports_" + std::to_string(::getpid()));
  std::filesystem::create_directories(d);
  return d.string();
}
}  // namespace

TEST_CASE("terminal table shows figures, bounds, verdicts and repro lines") {
  const GateRun run = test::judge_report(test::seed_json());
  const std::string t = render_terminal(run);
  CHECK(t.find("sage_like: rel_l2 vs baseline <= 0.05") != std::string::npos);
  CHECK(t.find("0.6257 FAIL") != std::string::npos);
  CHECK(t.find("REJECT sol_fully_dense_tau_minus_100") != std::string::npos);
  CHECK(t.find("missing measurement: rel_l2 vs baseline (attention)") != std::string::npos);
  CHECK(test::occurrences(t, "  repro: repro ") == 4);
  CHECK(t.find("summary: 0 accepted, 3 rejected, 1 inconclusive; exit code 1") != std::string::npos);
  CHECK(t.find("other levels:") != std::string::npos);
}

TEST_CASE("JSON report holds everything") {
  const GateRun run = test::judge_report(test::seed_json());
  const auto j = nlohmann::json::parse(render_json(run));
  CHECK(j["schema"] == "touchstone.gate-report/1");
  CHECK(j["summary"]["reject"] == 3);
  CHECK(j["summary"]["exit_code"] == 1);
  CHECK(j["candidates"].size() == 4);
  CHECK(j["gate"]["rules"][0]["id"] == "sage_like");
}

TEST_CASE("JUnit is well-formed XML with one failure per failed rule") {
  GateRun run = test::judge_report(test::seed_json());
  run.candidates[0].candidate = "a<b>&\"c'\x01";  // must be escaped
  const std::string x = render_junit(run);
  int failed = 0, open = 0, cases = 0;
  for (const auto& c : run.candidates)
    for (const auto& o : c.outcomes) {
      ++cases;
      failed += o.status == RuleStatus::fail;
      open += o.status == RuleStatus::inconclusive || (o.status == RuleStatus::missing && !o.optional);
    }
  CHECK(failed == 3);
  CHECK(open == 1);
  CHECK(test::occurrences(x, "<failure type=\"REJECT\"") == failed);
  CHECK(test::occurrences(x, "<failure type=\"INCONCLUSIVE\"") == open);
  CHECK(test::occurrences(x, "<testcase ") == cases);
  CHECK(x.find("a&lt;b&gt;&amp;&quot;c&#39;") != std::string::npos);

  const std::string dir = tmpdir();
  const std::string path = dir + "/junit.xml";
  write_file_atomic(path, x);
  if (std::filesystem::exists("/usr/bin/python3")) {
    const std::string cmd = "/usr/bin/python3 -c \"import sys, xml.dom.minidom as m; d = m.parse(sys.argv[1]); "
                            "sys.exit(0 if len(d.getElementsByTagName('failure')) == " +
                            std::to_string(failed + open) + " else 1)\" " + path;
    CHECK(std::system(cmd.c_str()) == 0);
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE("Markdown summary is a table with one row per candidate") {
  const GateRun run = test::judge_report(test::seed_json());
  const std::string md = render_markdown(run);
  CHECK(md.find("### touchstone gate `sparse_acceptance`: 0 of 4 accepted") != std::string::npos);
  CHECK(test::occurrences(md, "\n| `") == 4);
  CHECK(md.find("**REJECT**") != std::string::npos);
  CHECK(md.find("**INCONCLUSIVE**") != std::string::npos);
}

TEST_CASE("atomic write replaces whole files and leaves nothing on failure") {
  const std::string dir = tmpdir();
  const std::string path = dir + "/r.json";
  write_file_atomic(path, "first");
  write_file_atomic(path, "second");
  std::ifstream in(path);
  std::string s;
  std::getline(in, s);
  CHECK(s == "second");
  CHECK(std::distance(std::filesystem::directory_iterator(dir), std::filesystem::directory_iterator()) == 1);
  CHECK_THROWS_AS(write_file_atomic(dir + "/no/such/dir/r.json", "x"), InputError);
  std::filesystem::remove_all(dir);
}

TEST_CASE("leading columns: every table shows them before the rules, in the run's order") {
  GateRun run = test::judge_report(test::seed_json());
  run.columns = {"tau", "density|x"};
  run.candidates[0].shown = {"1.3", "0.098"};
  run.candidates[1].shown = {"7<8"};  // one short: the rest shows "-"
  const std::string t = render_terminal(run, 1000), m = render_markdown(run), h = render_html(run);
  CHECK(t.find("candidate") < t.find("tau"));
  CHECK(t.find("tau") < t.find("density|x"));
  CHECK(t.find("density|x") < t.find("sage_like:"));
  CHECK(t.find(run.candidates[0].candidate) < t.find("0.098"));
  CHECK(m.find("| candidate | tau | density\\|x | sage_like") != std::string::npos);
  CHECK(m.find("| `" + run.candidates[0].candidate + "` | 1.3 | 0.098 |") != std::string::npos);
  CHECK(m.find("| 7<8 | - |") != std::string::npos);
  CHECK(h.find("<th>candidate</th><th>tau</th><th>density|x</th>") != std::string::npos);
  CHECK(h.find("<td class=\"num\">7&lt;8</td><td class=\"num\">-</td>") != std::string::npos);
  const auto j = nlohmann::json::parse(render_json(run));
  CHECK(j["columns"].size() == 2);
  CHECK(j["candidates"][0]["shown"][1] == "0.098");
  CHECK_FALSE(j["candidates"][2].contains("shown"));
}

TEST_CASE("HTML: several runs on one page, each with its own anchors, under one title and notes") {
  const GateRun a = test::judge_report(test::seed_json());
  GateRun b = a;
  b.gate.name = "second-run";
  const std::string h = render_html({&a, &b}, "two <runs>", {"a note & more"});
  CHECK(test::occurrences(h, "<!DOCTYPE html>") == 1);
  CHECK(test::occurrences(h, "</html>") == 1);
  CHECK(h.find("<title>two &lt;runs&gt;</title>") != std::string::npos);
  CHECK(h.find("<li>a note &amp; more</li>") != std::string::npos);
  CHECK(h.find("second-run") != std::string::npos);
  for (size_t i = 0; i < a.candidates.size(); ++i)
    for (const char* r : {"run0-candidate-", "run1-candidate-"}) {
      CHECK(test::occurrences(h, "id=\"" + std::string(r) + std::to_string(i) + "\"") == 1);
      CHECK(test::occurrences(h, "href=\"#" + std::string(r) + std::to_string(i) + "\"") == 1);
    }
  // One run alone keeps its page as before.
  CHECK(render_html(a).find("id=\"candidate-0\"") != std::string::npos);
}

namespace {
using ts::test::lines_of;
// The words /bin/sh reads in `cmd`, one a line.
std::string shell_words(const std::string& cmd) {
  const std::string dir = tmpdir();
  {
    std::ofstream f(dir + "/words.sh");
    f << "printf '%s\\n' " << cmd << "\n";
  }
  std::system(("/bin/sh " + dir + "/words.sh > " + dir + "/words.txt").c_str());
  std::ifstream in(dir + "/words.txt");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}
using ts::test::widest;
}  // namespace

TEST_CASE("terminal: a gate of many rules puts each candidate in a block that fits the width") {
  GateRun run = test::judge_report(test::seed_json(), "sage_compat");
  REQUIRE(run.gate.rules.size() == 8);
  // A repro line longer than any terminal, with a quoted path holding spaces.
  run.candidates[0].repro = "touchstone gate --gate sage_compat --fixture '/a folder/" + std::string(60, 'x') +
                            "/f.h5' --baseline sage2 --candidate sol:tau=1.3,precision=int8_qk";
  // The table would be over 400 columns wide; the blocks fit.
  CHECK(widest(render_terminal(run, 1000)) > 400);
  for (int width : {100, 80, 60}) {
    INFO("width " << width);
    const std::string t = render_terminal(run, width);
    CHECK(widest(t) <= static_cast<size_t>(width));
    CHECK(t.find(" | ") == std::string::npos);  // no table
    for (const auto& c : run.candidates)
      CHECK(t.find(std::string(verdict_name(c.verdict)) + " " + c.candidate + "\n") != std::string::npos);
    CHECK(test::occurrences(t, "  not_slower: speedup >= 0.95") == static_cast<int>(run.candidates.size()));
    CHECK(t.find("summary: ") != std::string::npos);
    // The repro line, as a shell reads it with its continuations, is the
    // same command (the same words).
    const auto ls = lines_of(t);
    std::string wrapped_cmd;
    for (size_t i = 0; i < ls.size(); ++i) {
      if (ls[i].rfind("  repro: touchstone gate", 0) != 0) continue;
      wrapped_cmd = ls[i].substr(9);
      while (!wrapped_cmd.empty() && wrapped_cmd.back() == '\\' && i + 1 < ls.size())
        wrapped_cmd += "\n" + ls[++i];
      break;
    }
    REQUIRE(!wrapped_cmd.empty());
    CHECK(wrapped_cmd.find('\n') != std::string::npos);
    CHECK(shell_words(wrapped_cmd) == shell_words(run.candidates[0].repro));
    CHECK(shell_words(run.candidates[0].repro).find("/a folder/") != std::string::npos);
  }
}

TEST_CASE("terminal: other lines wrap the same way") {
  const std::string line = "touchstone demo: synthetic 'ci' fixture (seed 7), S=832 tokens (768 video, 64 "
                           "conditioning), H=4, D=128; synthesized in 0.2 s";
  const std::string w = wrap_for_terminal(line, 60);
  CHECK(widest(w) <= 60);
  CHECK(lines_of(w).size() == 3);
  CHECK(lines_of(w)[1].rfind("    ", 0) == 0);
  CHECK(wrap_for_terminal("short", 60) == "short\n");
}

TEST_CASE("terminal: a table that fits stays a table") {
  const GateRun run = test::judge_report(test::seed_json());
  const std::string wide = render_terminal(run, 1000);
  CHECK(wide.find("candidate") != std::string::npos);
  CHECK(wide.find(" | verdict") != std::string::npos);
  const std::string narrow = render_terminal(run, 60);
  CHECK(widest(narrow) <= 60);
  CHECK(narrow.find(" | verdict") == std::string::npos);
}

TEST_CASE("terminal width: COLUMNS, else the terminal, else 100") {
  const char* old = std::getenv("COLUMNS");
  const std::string saved = old ? old : "";
  ::setenv("COLUMNS", "77", 1);
  CHECK(terminal_width() == 77);
  ::setenv("COLUMNS", "5", 1);
  CHECK(terminal_width() == kMinTerminalWidth);
  ::setenv("COLUMNS", "wide", 1);  // not a number: as if unset
  if (!::isatty(STDOUT_FILENO)) CHECK(terminal_width() == 100);
  ::unsetenv("COLUMNS");
  if (!::isatty(STDOUT_FILENO)) CHECK(terminal_width() == 100);
  if (old) ::setenv("COLUMNS", saved.c_str(), 1);
}

TEST_CASE("Markdown keeps the speed interval") {
  GateRun run = test::judge_report(test::seed_json());
  std::optional<double> figure;
  for (auto& o : run.candidates[0].outcomes)
    if (o.metric == "speedup" && o.figure) {
      o.interval = Interval{};
      o.interval->lower = 1.234;
      o.interval->upper = 5.678;
      figure = o.figure;
    }
  REQUIRE(figure);
  CHECK(render_markdown(run).find(format_number(*figure) + " [1.234, 5.678] ") != std::string::npos);
}

TEST_CASE("JUnit classnames and names carry no dots but the one between gate and candidate") {
  GateRun run = test::judge_report(test::seed_json());
  run.gate.name = "my.gate";
  run.candidates[0].candidate = "sol:tau=1.3,precision=int8_qk";
  run.candidates[1].candidate = "plugin:/opt/k.v2/libk.so";
  const std::string x = render_junit(run);
  CHECK(x.find("classname=\"my_gate.sol:tau=1_3,precision=int8_qk\"") != std::string::npos);
  CHECK(x.find("classname=\"my_gate.plugin:/opt/k_v2/libk_so\"") != std::string::npos);
  for (size_t p = x.find("classname=\""); p != std::string::npos; p = x.find("classname=\"", p + 1)) {
    const size_t b = p + 11, e = x.find('"', b);
    CHECK(std::count(x.begin() + b, x.begin() + e, '.') == 1);
  }
  for (size_t p = x.find(" name=\""); p != std::string::npos; p = x.find(" name=\"", p + 1)) {
    if (x.compare(p - 9, 9, "testsuite") == 0 || x.compare(p - 10, 10, "testsuites") == 0) continue;
    const size_t b = p + 7, e = x.find('"', b);
    CHECK(std::count(x.begin() + b, x.begin() + e, '.') == 0);
  }
  // The spec as given is in the failure text.
  CHECK(x.find("candidate: sol:tau=1.3,precision=int8_qk") != std::string::npos);
}
