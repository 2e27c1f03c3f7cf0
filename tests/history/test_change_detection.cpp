// Change detection end to end: forty recorded runs whose rel_l2 steps up 3 % at run 25 and whose
// time steps up 10 % at run 30 amid 2 % noise; `history --json` names exactly those two changes
// and their commits, and the same series without steps none.
#include <nlohmann/json.hpp>

#include "catch.hpp"
#include "history/change_detection.hpp"
#include "history/series.hpp"
#include "history/history_support.hpp"
#include "tools/cli_runner.hpp"

using ts::history::detect_changes;

namespace {

std::string fresh_db(const std::string& name) {
  const std::string p = ts::test::scratch_dir() + "/" + name;
  for (const char* ext : {"", "-wal", "-shm"}) std::filesystem::remove(p + ext);
  return p;
}

}  // namespace

TEST_CASE("a deterministic figure: any change beyond the floor is a step, and none is none", "[history][changes]") {
  std::vector<double> y(12, 0.0125);
  std::vector<std::optional<double>> within(12);
  CHECK(detect_changes(y, within, {}).changes.empty());
  y[7] = y[8] = y[9] = y[10] = y[11] = 0.0125 * (1 + 1e-6);
  const auto d = detect_changes(y, within, {});
  REQUIRE(d.changes.size() == 1);
  CHECK(d.changes[0].index == 7);
  CHECK(d.changes[0].worse);
  CHECK(*d.changes[0].relative == Approx(1e-6).epsilon(1e-6));
  // A change at the latest run alone is a step too: CI sees it on the commit that made it.
  std::vector<double> last(12, 0.3);
  last[11] = 0.31;
  REQUIRE(detect_changes(last, within, {}).changes.size() == 1);
  // Below the relative floor (1e-9) is the same figure.
  last[11] = 0.3 * (1 + 1e-12);
  CHECK(detect_changes(last, within, {}).changes.empty());
}

TEST_CASE("a lower bound's figure regresses downwards; a range's away from its middle", "[history][changes]") {
  std::vector<double> y{1.5, 1.5, 1.5, 1.4, 1.4};
  std::vector<std::optional<double>> within(5);
  auto d = detect_changes(y, within, {"down", 0});
  REQUIRE(d.changes.size() == 1);
  CHECK(d.changes[0].worse);
  d = detect_changes(y, within, {"up", 0});
  CHECK_FALSE(d.changes[0].worse);
  std::vector<double> gain{1.0, 1.0, 0.995, 0.995};
  d = detect_changes(gain, std::vector<std::optional<double>>(4), {"away", 1.0});
  REQUIRE(d.changes.size() == 1);
  CHECK(d.changes[0].worse);
}

TEST_CASE("noisy points: a step inside their uncertainty is no change", "[history][changes]") {
  ts::test::Noise rng(7);
  std::vector<double> y;
  std::vector<std::optional<double>> within;
  for (int i = 0; i < 30; ++i) {
    y.push_back(1.0 * (i >= 15 ? 1.005 : 1.0) + 0.02 * rng.normal());  // 0.5 % step in 2 % noise
    within.push_back(0.02);
  }
  CHECK(detect_changes(y, within, {"down", 0}).changes.empty());
  for (int i = 15; i < 30; ++i) y[static_cast<size_t>(i)] += 0.15;  // now a 15 % step
  const auto d = detect_changes(y, within, {"down", 0});
  REQUIRE(d.changes.size() == 1);
  CHECK(d.changes[0].index == 15);
  CHECK_FALSE(d.changes[0].worse);
}

TEST_CASE("an outlier of a noisy series is no level; a deterministic figure's one-record blip is", "[history][changes]") {
  ts::test::Noise rng(5);
  std::vector<double> y;
  std::vector<std::optional<double>> within;
  for (int i = 0; i < 12; ++i) {
    y.push_back(1.2 * (1 + 0.01 * rng.normal()));
    within.push_back(0.012);
  }
  y[5] *= 1.09;  // one slow-looking record amid 1 % noise
  CHECK(detect_changes(y, within, {"down", 0}).changes.empty());
  y[11] *= 0.85;  // the latest record alone may start a new level
  const auto last = detect_changes(y, within, {"down", 0});
  REQUIRE(last.changes.size() == 1);
  CHECK(last.changes[0].index == 11);
  CHECK(last.changes[0].worse);
  std::vector<double> exact(12, 0.25);
  exact[5] = 0.26;  // one commit changed the figure, the next undid it: both are changes
  const auto blip = detect_changes(exact, std::vector<std::optional<double>>(12), {});
  REQUIRE(blip.changes.size() == 2);
  CHECK(blip.changes[0].index == 5);
  CHECK(blip.changes[1].index == 6);
}

TEST_CASE("history --json: 40 runs, rel_l2 +3 % at run 25 and time +10 % at run 30 amid 2 % noise", "[history][changes]") {
  const std::string db = fresh_db("steps.db");
  ts::test::record_forty(db, 0.03, 0.10, 1);
  const auto r = ts::test::run_cli("history " + db + " --json");
  INFO(r.err);
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(r.out);
  REQUIRE(j["series"].size() == 2);
  const auto& ch = j["changes"];
  INFO(ch.dump(1));
  REQUIRE(ch.size() == 2);
  std::map<std::string, nlohmann::json> by_metric;
  for (const auto& c : ch) by_metric[c["metric"].get<std::string>()] = c;
  REQUIRE(by_metric.count("rel_l2"));
  REQUIRE(by_metric.count("speedup"));
  const auto& l2 = by_metric["rel_l2"];
  CHECK(l2["commit"] == "c25");
  CHECK(l2["index"] == 24);
  CHECK(l2["relative"].get<double>() == Approx(0.03).epsilon(1e-9));
  CHECK(l2["direction"] == "regression");
  CHECK(l2["fixture"]["identity"] == "sha256:synthetic");
  const auto& sp = by_metric["speedup"];
  CHECK(sp["commit"] == "c30");
  // Time up 10 % is the speedup down to 1/1.1 of what it was, give or take the noise.
  CHECK(sp["relative"].get<double>() == Approx(1 / 1.1 - 1).margin(0.02));
  CHECK(sp["direction"] == "regression");
  CHECK(sp["z"].get<double>() < -5);

  // The latest change of both series regresses by more than 2 %: the CI check fails.
  auto reg = ts::test::run_cli("history " + db + " --regressions");
  CHECK(reg.code == 1);
  CHECK(reg.out.find("REGRESSION sage_like: rel_l2 vs baseline +3.00 % at commit c25 | sol:tau=1.3") != std::string::npos);
  reg = ts::test::run_cli("history " + db + " --regressions --min-change 0.2");
  CHECK(reg.code == 0);
  // Filters: one metric only.
  const auto only = nlohmann::json::parse(ts::test::run_cli("history " + db + " --metric rel_l2 --json").out);
  CHECK(only["series"].size() == 1);
  CHECK(only["changes"].size() == 1);
  // The records lie on 2026-11-30 (UTC): --since the next day finds none, the day before all.
  CHECK(nlohmann::json::parse(ts::test::run_cli("history " + db + " --since 2026-12-01 --json").out)["series"].empty());
  CHECK(nlohmann::json::parse(ts::test::run_cli("history " + db + " --since 2026-11-29 --json").out)["series"].size() == 2);
  // A date that is no date is bad input, not a filter that matches nothing.
  for (const char* bad : {"2026-13-45", "2026-02-30", "2026-11-29T25:00", "2026-11-29T08:60:00"}) {
    const auto r = ts::test::run_cli("history " + db + " --since " + bad);
    INFO(bad << ": " << r.err);
    CHECK(r.code == 2);
    CHECK(r.err.find("expected a UTC date or time") != std::string::npos);
  }
  CHECK(nlohmann::json::parse(ts::test::run_cli("history " + db + " --since 2024-02-29 --json").out)["series"].size() == 2);
  CHECK(ts::test::run_cli("history " + db + " --kernel nosuchkernel").out.find("nothing recorded matches") !=
        std::string::npos);
  CHECK(nlohmann::json::parse(ts::test::run_cli("history " + db + " --gate steps --fixture synthetic --kernel tau=1.3 --json").out)["series"].size() == 2);
}

TEST_CASE("history --json: the same 40 runs without steps report no change", "[history][changes]") {
  const std::string db = fresh_db("flat.db");
  ts::test::record_forty(db, 0, 0, 1);
  const auto r = ts::test::run_cli("history " + db + " --json");
  INFO(r.err);
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(r.out);
  REQUIRE(j["series"].size() == 2);
  CHECK(j["series"][0]["points"].size() == 40);
  CHECK(j["changes"].empty());
  CHECK(ts::test::run_cli("history " + db + " --regressions").code == 0);
}

TEST_CASE("history --since-last-accept: what moved since the kernel last passed", "[history][changes]") {
  const std::string db = fresh_db("accept.db");
  const ts::GateFile gate = ts::test::steps_gate();
  ts::test::Noise rng(3);
  ts::history::Store st = ts::history::Store::open_for_append(db);
  const auto t0 = std::chrono::system_clock::time_point(std::chrono::seconds(1796000000));
  // Accepted at 0.02 for four runs, then 0.06 (over the bound 0.05: REJECT) for two.
  for (int k = 1; k <= 6; ++k) {
    ts::history::Provenance p;
    p.command = "gate";
    p.commit = "k" + std::to_string(k);
    p.touchstone_version = TOUCHSTONE_VERSION;
    st.append(ts::history::make_run_record(
        ts::test::synthetic_run(gate, "sol:tau=2", k <= 4 ? 0.02 : 0.06, 8, 0.0, rng, static_cast<uint64_t>(k)), p,
        t0 + std::chrono::seconds(k)));
  }
  const auto r = ts::test::run_cli("history " + db + " --since-last-accept --metric rel_l2 --json");
  REQUIRE(r.code == 0);
  const auto s = nlohmann::json::parse(r.out)["series"][0]["since_last_accept"];
  CHECK(s["accepted"] == "k4");
  CHECK(s["relative"].get<double>() == Approx(2.0));
  REQUIRE(s["changes"].size() == 1);
  CHECK(s["changes"][0]["commit"] == "k5");
  const auto text = ts::test::run_cli("history " + db + " --since-last-accept --metric rel_l2");
  CHECK(text.out.find("last ACCEPT #4 (commit k4") != std::string::npos);
}

// How often the forty-run check finds exactly the two steps at their runs, over many noise seeds
// (the forty-run test above uses one): a step of 10 % in 2 % noise per sample and per run can be
// placed one run early or late when a neighbour's noise is large. Hidden: run it by its tag.
TEST_CASE("the forty-run detection over 100 noise seeds", "[.][seeds]") {
  int exact = 0;
  for (uint64_t seed = 1; seed <= 100; ++seed) {
    const std::string db = fresh_db("seed.db");
    ts::test::record_forty(db, 0.03, 0.10, seed);
    const auto series = ts::history::build_series(ts::history::load_figures(ts::history::Store::open_for_read(db), {}));
    bool ok = series.size() == 2;
    for (const auto& s : series) {
      const size_t want = s.metric == "rel_l2" ? 24 : 29;
      ok = ok && s.detection.changes.size() == 1 && s.detection.changes[0].index == want;
    }
    exact += ok;
    if (!ok)
      for (const auto& s : series) {
        std::printf("seed %d %s:", static_cast<int>(seed), s.metric.c_str());
        for (const auto& c : s.detection.changes) std::printf(" %zu (z %.1f)", c.index, c.z);
        std::printf("\n");
      }
  }
  int quiet = 0;
  for (uint64_t seed = 1; seed <= 100; ++seed) {
    const std::string db = fresh_db("seed.db");
    ts::test::record_forty(db, 0, 0, seed);
    const auto series = ts::history::build_series(ts::history::load_figures(ts::history::Store::open_for_read(db), {}));
    quiet += std::all_of(series.begin(), series.end(), [](const auto& s) { return s.detection.changes.empty(); });
  }
  std::printf("exactly the two steps at their runs: %d of 100 seeds; no change without steps: %d of 100\n", exact, quiet);
  CHECK(exact >= 95);
  CHECK(quiet >= 95);
}
