// Report renderings: terminal table, JSON, JUnit (well-formed, one failure
// per failed rule), Markdown, and atomic writes.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "catch.hpp"
#include "core/error.hpp"
#include "gates/report.hpp"
#include "seed_support.hpp"

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
  CHECK(md.find("### touchstone gate `sparse-attention-acceptance`: 0 of 4 accepted") != std::string::npos);
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
  const std::string t = render_terminal(run), m = render_markdown(run), h = render_html(run);
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
