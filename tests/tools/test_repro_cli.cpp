// Every repro line touchstone prints reproduces its verdict and its figures
// (drivers/case.hpp Case::repro): for gate, sweep, demo, batch and triage, the
// line each printed is run as a user would copy it, and the same verdict and
// figures come back, with options other than the defaults (--pairs, --exact,
// --accuracy-only, --seed): a repro line that drops one of them judges
// another problem, and fails here.
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "catch.hpp"
#include "cli_runner.hpp"

namespace {

namespace fs = std::filesystem;

const std::string& fixture() {
  static const std::string f = [] {
    const std::string dir = ts::test::scratch_dir() + "/repro";
    fs::create_directories(dir);
    const std::string p = dir + "/tiny.h5";
    REQUIRE(ts::test::run_cli("fixture synth --force --preset tiny --seed 5 -o " + p).code == 0);
    return p;
  }();
  return f;
}

// A gate that times emulations, so that --pairs, --warmup and --seed reach the speed evidence;
// sol is 0.028 from sage2 on this fixture, so its bound of 0.02 REJECTs sol whatever its speed.
const std::string& timed_gate() {
  static const std::string g = [] {
    const std::string p = ts::test::scratch_dir() + "/repro/timed.gate.json";
    std::ofstream(p) << R"({"schema": "touchstone.gate/1", "name": "timed", "baseline": "sage2:preset=sm121",
      "tensor": "attention", "time_emulations": true,
      "rules": [{"id": "sage_like", "metric": "rel_l2", "against": "baseline", "max": 0.02},
                {"id": "close", "metric": "rel_l2", "against": "exact", "max": 0.05},
                {"id": "faster", "metric": "speedup", "against": "baseline", "min": 1.0, "confidence": 0.9}]})";
    return p;
  }();
  return g;
}

// The line as the CLI runner takes it: without its leading `touchstone `.
std::string args_of(const std::string& repro) {
  REQUIRE(repro.rfind("touchstone ", 0) == 0);
  return repro.substr(std::string("touchstone ").size());
}

// `sub`'s figures are `all`'s where `all` has them (a run that computes more figures per group
// than another, as gate beside a sweep, still agrees on every figure both show).
void check_figures(const nlohmann::json& want, const nlohmann::json& got, const std::string& what) {
  for (auto it = want.begin(); it != want.end(); ++it) {
    INFO(what << "/" << it.key());
    REQUIRE(got.contains(it.key()));
    CHECK(got[it.key()] == it.value());
  }
}

// One rule's outcome as the repro must give it again. A timed speed rule's own
// figure is a measurement (never the same twice); how it was measured is.
void check_rule(const nlohmann::json& want, const nlohmann::json& got) {
  INFO("rule " << want["id"]);
  CHECK(got["id"] == want["id"]);
  CHECK(got["bound"] == want["bound"]);
  if (want["metric"] == "speedup" && want.contains("interval") && !want["interval"].is_null()) {
    REQUIRE(got.contains("interval"));
    for (const char* k : {"samples", "seed", "confidence", "method"}) {
      INFO(k);
      CHECK(got["interval"][k] == want["interval"][k]);
    }
    return;
  }
  CHECK(got["status"] == want["status"]);
  CHECK(got["figure"] == want["figure"]);
  CHECK(got["message"] == want["message"]);
}

bool timed_rule(const nlohmann::json& r) {
  return r["metric"] == "speedup" && r.contains("interval") && !r["interval"].is_null();
}

bool timed_speed(const nlohmann::json& cand) {
  for (const auto& r : cand["rules"])
    if (timed_rule(r)) return true;
  return false;
}

// A rule that no fresh timing sample can change failed: the verdict is REJECT again.
bool untimed_rule_failed(const nlohmann::json& cand) {
  for (const auto& r : cand["rules"])
    if (!timed_rule(r) && r["status"] == "fail") return true;
  return false;
}

// Runs the candidate's repro line and checks that the one candidate it judges
// is `cand` again: verdict, every rule's outcome, every figure.
void check_repro(const nlohmann::json& cand) {
  REQUIRE(cand.contains("repro"));
  const std::string repro = cand["repro"];
  INFO("repro: " << repro);
  const auto r = ts::test::run_cli(args_of(repro) + " --json");
  INFO(r.err);
  REQUIRE((r.code == 0 || r.code == 1));
  const nlohmann::json j = nlohmann::json::parse(r.out);
  REQUIRE(j["candidates"].size() == 1);
  const nlohmann::json& got = j["candidates"][0];
  CHECK(got["candidate"] == cand["candidate"]);
  // A timed candidate's speed verdict rests on fresh samples (a confident
  // "slower" may come back inconclusive); only a failed untimed rule fixes it.
  if (!timed_speed(cand) || untimed_rule_failed(cand)) CHECK(got["verdict"] == cand["verdict"]);
  REQUIRE(got["rules"].size() == cand["rules"].size());
  for (size_t i = 0; i < cand["rules"].size(); ++i) check_rule(cand["rules"][i], got["rules"][i]);
  for (const char* k : {"vs_baseline", "vs_exact"})
    if (cand["details"].contains(k)) check_figures(cand["details"][k], got["details"][k], k);
  CHECK(got["repro"] == cand["repro"]);  // the repro's own repro is itself
}

// Every candidate of a gate report that has a repro line (all but ACCEPTed ones); at least `min`.
void check_every_repro(const nlohmann::json& run, size_t min = 1) {
  size_t n = 0;
  for (const auto& c : run["candidates"])
    if (c.contains("repro")) {
      check_repro(c);
      ++n;
    }
  CHECK(n >= min);
}

}  // namespace

TEST_CASE("repro: gate's lines give the same verdicts and figures, options included", "[repro]") {
  const std::string f = fixture();
  SECTION("--exact and --seed") {
    const auto r = ts::test::run_cli("gate --gate sparse_acceptance --fixture " + f +
                                     " --candidate sol:tau=1.3 --candidate sage2:preset=sm89 --exact exact:precision=fp32"
                                     " --seed 5 --json");
    REQUIRE((r.code == 0 || r.code == 1));
    const nlohmann::json j = nlohmann::json::parse(r.out);
    for (const auto& c : j["candidates"]) {
      CHECK(c["repro"].get<std::string>().find("--exact exact:precision=fp32") != std::string::npos);
      CHECK(c["repro"].get<std::string>().find("--seed 5") != std::string::npos);
    }
    check_every_repro(j, 2);
  }
  SECTION("--accuracy-only") {
    const auto r = ts::test::run_cli("gate --gate " + timed_gate() + " --fixture " + f +
                                     " --candidate sol:tau=2 --candidate sol:tau=3 --accuracy-only --json");
    REQUIRE((r.code == 0 || r.code == 1));
    const nlohmann::json j = nlohmann::json::parse(r.out);
    check_every_repro(j, 1);
  }
  SECTION("--pairs, --warmup, --seed on a timed gate") {
    const auto r = ts::test::run_cli("gate --gate " + timed_gate() + " --fixture " + f +
                                     " --candidate sol:tau=3 --pairs 6 --warmup 0 --seed 9 --json");
    REQUIRE((r.code == 0 || r.code == 1));
    const nlohmann::json j = nlohmann::json::parse(r.out);
    REQUIRE(j["candidates"].size() == 1);
    REQUIRE(timed_speed(j["candidates"][0]));
    check_every_repro(j, 1);
  }
  SECTION("--pairs 0: nothing timed, as a sweep's rows") {
    const auto r = ts::test::run_cli("gate --gate " + timed_gate() + " --fixture " + f +
                                     " --candidate sol:tau=3 --pairs 0 --json");
    REQUIRE(r.code == 1);
    const nlohmann::json j = nlohmann::json::parse(r.out);
    CHECK(j["candidates"][0]["repro"].get<std::string>().find("--pairs 0") != std::string::npos);
    check_every_repro(j, 1);
  }
}

TEST_CASE("repro: sweep's rows reproduce through gate", "[repro]") {
  const std::string f = fixture();
  for (const std::string extra : {"", " --accuracy-only", " --pairs 6 --seed 4"}) {
    INFO("sweep" << extra);
    const auto r = ts::test::run_cli("sweep " + f + " --tau 1.3,3 --gate " + timed_gate() +
                                     " --exact exact:precision=fp32" + extra + " --json");
    REQUIRE((r.code == 0 || r.code == 1));
    const nlohmann::json j = nlohmann::json::parse(r.out);
    check_every_repro(j["gate"], 1);
  }
}

TEST_CASE("repro: demo's lines reproduce its verdicts (--pairs and --seed are the demo's own)", "[repro]") {
  const std::string dir = ts::test::scratch_dir() + "/repro/demo";
  const auto r = ts::test::run_cli("demo --preset tiny --seed 11 --pairs 4 --keep " + dir + " --json");
  REQUIRE(r.code == 0);
  const nlohmann::json j = nlohmann::json::parse(r.out);
  for (const auto& c : j["gate"]["candidates"])
    if (c.contains("repro")) {
      CHECK(c["repro"].get<std::string>().find("--pairs 4") != std::string::npos);
      CHECK(c["repro"].get<std::string>().find("--seed 11") != std::string::npos);
    }
  check_every_repro(j["gate"], 1);
  if (j["real_kernels"].is_object()) check_every_repro(j["real_kernels"], 0);
}

TEST_CASE("repro: batch's lines reproduce its verdicts with the plan's options", "[repro]") {
  const std::string dir = ts::test::scratch_dir() + "/repro/batch";
  fs::create_directories(dir);
  const std::string plan = dir + "/plan.json";
  std::ofstream(plan) << nlohmann::json{{"schema", "touchstone.plan/1"},
                                        {"fixtures", {fixture()}},
                                        {"gates", {timed_gate(), "sparse_acceptance"}},
                                        {"candidates", {"sol:tau=1.3", "sage2:preset=sm89"}},
                                        {"options", {{"pairs", 6}, {"warmup", 0}, {"seed", 13},
                                                     {"exact", "exact:precision=fp32"}}}}
                             .dump();
  const auto r = ts::test::run_cli("batch " + plan + " --json");
  INFO(r.err);
  REQUIRE((r.code == 0 || r.code == 1));
  const nlohmann::json j = nlohmann::json::parse(r.out);
  REQUIRE(j["runs"].size() == 2);
  for (const auto& run : j["runs"]) check_every_repro(run, 1);

  // accuracy_only in a plan reaches the lines too.
  std::ofstream(plan) << nlohmann::json{{"schema", "touchstone.plan/1"},
                                        {"fixtures", {fixture()}},
                                        {"gates", {timed_gate()}},
                                        {"candidates", {"sol:tau=2", "sol:tau=3"}},
                                        {"options", {{"accuracy_only", true}}}}
                             .dump();
  const auto a = ts::test::run_cli("batch " + plan + " --json");
  REQUIRE((a.code == 0 || a.code == 1));
  const nlohmann::json ja = nlohmann::json::parse(a.out);
  for (const auto& run : ja["runs"]) check_every_repro(run, 1);
}

TEST_CASE("repro: triage's command gives the same figures, its extract line a slice that triages", "[repro]") {
  const std::string f = fixture();
  const auto r = ts::test::run_cli("triage " + f + " --candidate sol:tau=1.3 --exact exact:precision=fp32 --top 4 --json");
  INFO(r.err);
  REQUIRE(r.code == 0);
  const nlohmann::json j = nlohmann::json::parse(r.out);
  const std::string line = j["repro"]["command"];
  CHECK(line.find("--exact exact:precision=fp32") != std::string::npos);
  CHECK(line.find("--top 4") != std::string::npos);
  const auto again = ts::test::run_cli(args_of(line) + " --json");
  REQUIRE(again.code == 0);
  const nlohmann::json k = nlohmann::json::parse(again.out);
  for (const char* key : {"metrics", "worst_groups_vs_exact", "ranked_cells", "worst_elements", "decomposition"}) {
    INFO(key);
    CHECK(k[key] == j[key]);
  }
  CHECK(k["repro"] == j["repro"]);

  // The extract line, its output put in the scratch folder, makes a slice the on-slice line triages.
  const std::string small = ts::test::scratch_dir() + "/repro/small.h5";
  auto in_scratch = [&](std::string s) {
    const std::string from = "small.h5";
    for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + small.size())) {
      if (at > 0 && s[at - 1] == '/') continue;
      s.replace(at, from.size(), small);
    }
    return s;
  };
  const auto ex = ts::test::run_cli(args_of(in_scratch(j["repro"]["extract"])) + " --force");
  INFO(ex.err);
  REQUIRE(ex.code == 0);
  const auto on = ts::test::run_cli(args_of(in_scratch(j["repro"]["on_slice"])) + " --json");
  INFO(on.err);
  CHECK(on.code == 0);
}
