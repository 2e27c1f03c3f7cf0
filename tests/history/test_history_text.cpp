// `touchstone history` in a terminal: the rule and metric lead every series header and
// REGRESSION line, fixtures are named by a short identity (12 digits, more where two
// identities of the store share them, as git shortens commits), and every line fits COLUMNS
// without cutting anything; --json keeps the whole identity.
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <sstream>

#include "catch.hpp"
#include "gates/judge_for_tests.hpp"
#include "history/history_support.hpp"
#include "history/short_ids.hpp"
#include "text_lines.hpp"
#include "tools/cli_runner.hpp"

namespace {

// Two fixtures whose identities share their first 12 digits, a third apart.
const std::string kA = "sha256:3f2a9c1b0d4e" "5a" + std::string(50, '1');
const std::string kB = "sha256:3f2a9c1b0d4e" "6b" + std::string(50, '2');
const std::string kC = "sha256:77e0c41d9a2b" "00" + std::string(50, '3');

void record_text_runs(const std::string& db, const std::string& identity, const std::string& candidate, int runs, int step_at) {
  const ts::GateFile gate = ts::test::steps_gate();
  ts::test::Noise rng(3);
  ts::history::Store st = ts::history::Store::open_for_append(db);
  const auto t0 = std::chrono::system_clock::time_point(std::chrono::seconds(1796000000));
  for (int k = 1; k <= runs; ++k) {
    const double l2 = 0.02 * (k >= step_at ? 1.05 : 1), ms = 10 * (k >= step_at ? 1.2 : 1);
    ts::GateRun run = ts::test::synthetic_run(gate, candidate, l2, ms, 0.02, rng, 7000 + static_cast<uint64_t>(k));
    run.context["fixture_identity"] = identity;
    ts::history::Provenance p;
    p.command = "gate";
    p.commit = std::to_string(10 + k) + "d8c7b6a5f4e3d2c1b0a9d8c7b6a5f4e3d2c1b0a";
    p.commit_source = "flag";
    p.touchstone_version = TOUCHSTONE_VERSION;
    st.append(ts::history::make_run_record(run, p, t0 + std::chrono::seconds(k)));
  }
}

struct TextColumns {
  explicit TextColumns(const char* v) { ::setenv("COLUMNS", v, 1); }
  ~TextColumns() { ::unsetenv("COLUMNS"); }
};

}  // namespace

TEST_CASE("short identities: 12 characters, longer only where another identity shares them", "[history][text]") {
  const ts::history::ShortIds ids({"3f2a9c1b0d4e5a11", "3f2a9c1b0d4e6b22", "77e0c41d9a2b0033", "c25"});
  CHECK(ids("3f2a9c1b0d4e5a11") == "3f2a9c1b0d4e5");
  CHECK(ids("3f2a9c1b0d4e6b22") == "3f2a9c1b0d4e6");
  CHECK(ids("77e0c41d9a2b0033") == "77e0c41d9a2b");
  CHECK(ids("c25") == "c25");
  CHECK(ts::history::identity_digits("sha256:abc") == "abc");
}

TEST_CASE("history in a terminal: the rule first, short fixture identities, every line within COLUMNS", "[history][text]") {
  const std::string db = ts::test::scratch_dir() + "/text.db";
  for (const char* ext : {"", "-wal", "-shm"}) std::filesystem::remove(db + ext);
  const std::string cand = "sol:tau=1.3,precision=int8_qk,compensation=off";
  record_text_runs(db, kA, cand, 12, 8);
  record_text_runs(db, kB, cand, 6, 99);
  record_text_runs(db, kC, "sage2:preset=sm90", 3, 99);
  for (const char* width : {"80", "60"}) {
    const TextColumns c(width);
    const auto r = ts::test::run_cli("history " + db + " --regressions");
    INFO(width << "\n" << r.out << r.err);
    CHECK(r.code == 1);
    int headers = 0, regressions = 0;
    bool last_blank = false;
    for (const auto& l : ts::test::lines_of(r.out)) {
      CHECK(l.size() <= static_cast<size_t>(std::atoi(width)));
      // A series header follows a blank line and starts with the rule's id and metric.
      if (last_blank && !l.empty() && l[0] != ' ' && l.rfind("REGRESSION", 0) != 0 && l.rfind("no regression", 0) != 0) {
        ++headers;
        CHECK((l.rfind("sage_like: rel_l2 vs baseline", 0) == 0 || l.rfind("faster: speedup vs baseline", 0) == 0));
      }
      if (l.rfind("REGRESSION", 0) == 0) {
        ++regressions;
        CHECK((l.rfind("REGRESSION sage_like: rel_l2 vs baseline +5.00 %", 0) == 0 ||
               l.rfind("REGRESSION faster: speedup vs baseline", 0) == 0));
      }
      last_blank = l.empty();
    }
    CHECK(headers == 6);
    CHECK(regressions == 2);
    // Wrapped, not cut: every word of the regression lines is there.
    CHECK(r.out.find("...") == std::string::npos);
    CHECK(r.out.find("3f2a9c1b0d4e5") != std::string::npos);
    CHECK(r.out.find("3f2a9c1b0d4e6") != std::string::npos);
    CHECK(r.out.find("3f2a9c1b0d4e5a") == std::string::npos);
    CHECK(r.out.find("77e0c41d9a2b") != std::string::npos);
    CHECK(r.out.find("77e0c41d9a2b0") == std::string::npos);
    CHECK(r.out.find(kA.substr(7)) == std::string::npos);  // never the whole 64 digits
    CHECK(r.out.find("18d8c7b6a5f4") != std::string::npos);  // commits shortened the same way
    CHECK(r.out.find("18d8c7b6a5f4e") == std::string::npos);
  }
  // The short identity is a working filter, and the JSON keeps the whole identity.
  const auto j = nlohmann::json::parse(ts::test::run_cli("history " + db + " --fixture 3f2a9c1b0d4e5 --json").out);
  REQUIRE(j["series"].size() == 2);
  CHECK(j["series"][0]["fixture"]["identity"] == kA);
}

namespace {

// Where each column of a table's header begins and ends: "figure" right-aligned ends where its
// numbers end, "commit" left-aligned begins where its cells begin.
struct HeaderColumn {
  std::string name;
  bool right;
};
const std::vector<HeaderColumn> kHistoryColumns = {{"#", true},      {"recorded (UTC)", false}, {"commit", false},
                                                   {"figure", true}, {"sigma", true},           {"status", false},
                                                   {"verdict", false}};

bool cell_starts(const std::string& row, size_t at) { return at < row.size() && row[at] != ' ' && (at == 0 || row[at - 1] == ' '); }
bool cell_ends(const std::string& row, size_t end) { return end > 0 && end <= row.size() && row[end - 1] != ' ' && (end == row.size() || row[end] == ' '); }

}  // namespace

TEST_CASE("history in a terminal: each record's cells under their headers at 80 columns and more", "[history][text]") {
  const std::string db = ts::test::scratch_dir() + "/columns.db";
  for (const char* ext : {"", "-wal", "-shm"}) std::filesystem::remove(db + ext);
  // Two sides of a noisy speed series: sigma printed, figures of 6 digits, a table wider than
  // 80 columns when laid out at its widest.
  record_text_runs(db, kA, "sol:tau=1.3,precision=int8_qk,compensation=off", 12, 8);
  for (const char* width : {"80", "100", "120"}) {
    const TextColumns c(width);
    const auto r = ts::test::run_cli("history " + db);
    INFO(width << "\n" << r.out << r.err);
    REQUIRE(r.code == 0);
    const auto lines = ts::test::lines_of(r.out);
    int tables = 0, rows = 0;
    for (size_t i = 0; i < lines.size(); ++i) {
      CHECK(lines[i].size() <= static_cast<size_t>(std::atoi(width)));
      if (lines[i].find("recorded (UTC)") == std::string::npos) continue;
      ++tables;
      const std::string& head = lines[i];
      for (size_t k = i + 1; k < lines.size() && lines[k].rfind("  change", 0) != 0 && lines[k].rfind("  no change", 0) != 0 &&
                             !lines[k].empty();
           ++k) {
        ++rows;
        const std::string& row = lines[k];
        INFO("header: " << head << "\nrecord: " << row);
        for (const auto& col : kHistoryColumns) {
          const size_t at = head.find(col.name);
          REQUIRE(at != std::string::npos);
          if (col.right) CHECK(cell_ends(row, at + col.name.size()));
          else CHECK(cell_starts(row, at));
        }
      }
    }
    CHECK(tables == 2);
    CHECK(rows == 24);
  }
}

namespace {

// A gate of one cosine rule (a lower bound: worse is down), and runs whose cosine moves by 2e-7
// of itself at run 5: a change that is real (the figure is exact) and far under --min-change.
void record_cosine_runs(const std::string& db) {
  const ts::GateFile gate = ts::parse_gate(R"({"schema": "touchstone.gate/1", "name": "close", "baseline": "sage2",
    "rules": [{"id": "close", "metric": "cosine", "against": "baseline", "min": 0.99}]})", "close gate");
  ts::history::Store st = ts::history::Store::open_for_append(db);
  const auto t0 = std::chrono::system_clock::time_point(std::chrono::seconds(1796000000));
  for (int k = 1; k <= 8; ++k) {
    ts::Evidence ev;
    ev.candidate = "sol:tau=1.3";
    ev.vs_baseline["attention"] = {{"cosine", 0.9975463 * (k >= 5 ? 1 - 2e-7 : 1)}, {"nonfinite", 0.0},
                                   {"zero_fraction", 0.0}, {"zero_fraction_ref", 0.0}};
    ts::GateRun run;
    run.gate = gate;
    run.mode = "fixture";
    run.input = "cos.h5";
    run.baseline = "sage2";
    run.context = {{"fixture", "cos.h5"}, {"fixture_identity", kC}};
    run.candidates.push_back(ts::judge_for_test(gate, ev, ""));
    ts::history::Provenance p;
    p.command = "gate";
    p.commit = "c" + std::to_string(k);
    p.commit_source = "flag";
    p.touchstone_version = TOUCHSTONE_VERSION;
    st.append(ts::history::make_run_record(run, p, t0 + std::chrono::seconds(k)));
  }
}

}  // namespace

TEST_CASE("history: one rule says what a regression is, in the series, --regressions and JSON alike", "[history][text]") {
  const std::string db = ts::test::scratch_dir() + "/cosine.db";
  for (const char* ext : {"", "-wal", "-shm"}) std::filesystem::remove(db + ext);
  record_cosine_runs(db);
  const TextColumns wide("200");  // each change on one line, to be found whole
  const auto text = ts::test::run_cli("history " + db + " --regressions");
  INFO(text.out << text.err);
  CHECK(text.code == 0);
  // The change is found and said as it is: worse, under the 2 % that is a regression, with a
  // size that is not zero and figures that differ.
  CHECK(text.out.find("REGRESSION") == std::string::npos);
  CHECK(text.out.find("0.00 %") == std::string::npos);
  CHECK(text.out.find("(-2e-05 %), worse, not a regression (under --min-change 2.00 %)") != std::string::npos);
  CHECK(text.out.find("0.9975463 -> 0.9975461") != std::string::npos);
  CHECK(text.out.find("no regression: no series' latest change is a regression of 2.00 % or more") != std::string::npos);
  const auto j = nlohmann::json::parse(ts::test::run_cli("history " + db + " --json").out);
  REQUIRE(j["changes"].size() == 1);
  CHECK(j["changes"][0]["direction"] == "worse");
  CHECK(j["min_change"].get<double>() == 0.02);
  // With --min-change 0 any worsening is a regression: the series says so and the check fails.
  const auto strict = ts::test::run_cli("history " + db + " --regressions --min-change 0");
  INFO(strict.out);
  CHECK(strict.code == 1);
  CHECK(strict.out.find("(-2e-05 %), REGRESSION, exact") != std::string::npos);
  CHECK(strict.out.find("REGRESSION close: cosine vs baseline -2e-05 % at commit c5") != std::string::npos);
  CHECK(nlohmann::json::parse(ts::test::run_cli("history " + db + " --json --min-change 0").out)["changes"][0]["direction"] ==
        "regression");
}
