// Every figure of compare and gate on a `ci` fixture is the one touchstone
// 07398ad computed, bit for bit (tests/tools/data/ci_seed3_figures.json): the
// metric passes may get faster, never different. Numbers are printed to
// round-trip, so equal parsed doubles are equal bits.
//
// And every verdict, figure and word of the JSON reports of gate (sage_compat,
// sparse_acceptance, --accuracy-only), compare --breakdown and sweep --gate on
// `tiny` (with a block) and `ci` is the one touchstone 9f7039e wrote, before the
// writers moved to report/ (tests/tools/data/report_json_tiny_ci.json), but for
// timings and the scratch folder's path. TOUCHSTONE_WRITE_GOLDEN=1 writes that
// file instead of comparing (only ever on purpose: the diff is the review).
// `medium` is too slow for CI: benchmarks/report-json-medium compares two builds there.
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "catch.hpp"
#include "cli_runner.hpp"
#include "json_difference.hpp"

namespace {

using ts::test::first_difference;

std::string figures_file() { return std::string(TOUCHSTONE_SOURCE_DIR) + "/tests/tools/data/ci_seed3_figures.json"; }
std::string reports_file() { return std::string(TOUCHSTONE_SOURCE_DIR) + "/tests/tools/data/report_json_tiny_ci.json"; }

// A seed-3 fixture of `preset` with the stored outputs the figures are of, made once per process.
const std::string& seed3_fixture(const std::string& preset, bool with_block) {
  static std::map<std::string, std::string> made;
  const std::string key = preset + (with_block ? "_block" : "");
  if (const auto it = made.find(key); it != made.end()) return it->second;
  const std::string dir = ts::test::scratch_dir() + "/figures";
  std::filesystem::create_directories(dir);
  const std::string f = dir + "/" + key + ".h5";
  REQUIRE(ts::test::run_cli("fixture synth --force --preset " + preset + " --seed 3 " +
                            (with_block ? "--with-block " : "") + "-o " + f).code == 0);
  for (const char* ref : {"--backend exact", "--backend sage2 --preset sm121", "--backend sol --tau 1.3",
                          "--backend sage2 --preset sm90 round_out=0"})
    REQUIRE(ts::test::run_cli("reference " + f + " " + ref).code == 0);
  return made[key] = f;
}

// The JSON reports of one fixture, keyed by the command that wrote them.
nlohmann::json reports_of(const std::string& f) {
  const std::string dir = std::filesystem::path(f).parent_path().string();
  nlohmann::json out = nlohmann::json::object();
  auto add = [&](const std::string& key, const std::string& args) {
    const auto r = ts::test::run_cli(args + " --json");
    INFO(args << "\n" << r.err);
    REQUIRE((r.code == 0 || r.code == 1));
    nlohmann::json j = nlohmann::json::parse(r.out);
    ts::test::normalise_report(j, {dir});
    out[key] = j;
  };
  for (const char* gate : {"sage_compat", "sparse_acceptance"})
    add(std::string("gate ") + gate, std::string("gate --gate ") + gate + " --fixture " + f +
                                         " --baseline stored:sage2_sm121 --exact stored:exact"
                                         " --candidate stored:sol_tau1.3_bf16 --candidate stored:sage2_sm90_round_out-off"
                                         " --candidate stored:exact --accuracy-only");
  for (const char* pair : {"sol_tau1.3_bf16 sage2_sm121", "sage2_sm90_round_out-off exact"})
    add(std::string("compare ") + pair, "compare " + f + " " + pair + " --breakdown");
  add("sweep sparse_acceptance", "sweep " + f + " --gate sparse_acceptance --accuracy-only");
  return out;
}

}  // namespace

TEST_CASE("compare and gate figures on ci are 07398ad's, bit for bit") {
  const nlohmann::json gold = nlohmann::json::parse(ts::test::read_file(figures_file()));
  const std::string& f = seed3_fixture("ci", false);

  for (const auto& p : gold["pairs"]) {
    const std::string a = p[0], b = p[1];
    const auto r = ts::test::run_cli("compare " + f + " " + a + " " + b + " --breakdown --json");
    REQUIRE(r.code == 0);
    nlohmann::json got = nlohmann::json::parse(r.out);
    got.erase("fixture");
    INFO("compare " << a << " " << b);
    CHECK(first_difference(gold["compare"][a + " " + b], got) == "");
  }
  for (const char* gate : {"sage_compat", "sparse_acceptance"}) {
    const auto r = ts::test::run_cli(std::string("gate --gate ") + gate + " --fixture " + f +
                                     " --baseline stored:sage2_sm121 --candidate stored:sol_tau1.3_bf16"
                                     " --candidate stored:sage2_sm90_round_out-off --json");
    REQUIRE((r.code == 0 || r.code == 1));
    const nlohmann::json j = nlohmann::json::parse(r.out);
    REQUIRE(j["candidates"].size() == gold["gate"][gate].size());
    for (size_t i = 0; i < j["candidates"].size(); ++i) {
      const nlohmann::json& c = j["candidates"][i];
      for (const char* k : {"rules", "verdict"}) {
        INFO(gate << " candidate " << i << " " << k);
        CHECK(first_difference(gold["gate"][gate][i][k], c[k]) == "");
      }
      for (const char* k : {"vs_baseline", "vs_exact", "worst_vs_baseline", "worst_vs_exact"}) {
        INFO(gate << " candidate " << i << " " << k);
        CHECK(first_difference(gold["gate"][gate][i][k], c["details"][k]) == "");
      }
    }
  }
}

// The golden file was written by 9f7039e; a976ecf rewrote it once, for the problem object's
// additions only (every case's "name", repro lines that carry their run options): no figure,
// rule or verdict changed (benchmarks/results/2026-12-04_report_json_medium.json for medium).
TEST_CASE("JSON reports of gate, compare and sweep on tiny and ci keep every figure and verdict") {
  nlohmann::json got = nlohmann::json::object();
  got["made_by"] = "touchstone 9f7039e, names and repro lines a976ecf (tests/tools/test_metric_figures_cli.cpp, TOUCHSTONE_WRITE_GOLDEN=1)";
  got["tiny"] = reports_of(seed3_fixture("tiny", true));  // a block: the sweep's stage chain
  got["ci"] = reports_of(seed3_fixture("ci", false));
  if (ts::test::write_golden_if_asked(reports_file(), got)) {
    WARN("wrote " << reports_file());
    return;
  }
  const nlohmann::json gold = nlohmann::json::parse(ts::test::read_file(reports_file()));
  for (const char* preset : {"tiny", "ci"}) {
    REQUIRE(gold[preset].size() == got[preset].size());
    for (auto it = gold[preset].begin(); it != gold[preset].end(); ++it) {
      INFO(preset << ": " << it.key());
      CHECK(first_difference(it.value(), got[preset][it.key()]) == "");
    }
  }
  // The comparison sees one figure's last bit.
  nlohmann::json perturbed = gold["ci"]["gate sparse_acceptance"];
  double& fig = perturbed["candidates"][0]["details"]["vs_baseline"]["rel_l2"].get_ref<double&>();
  fig = std::nextafter(fig, 1.0);
  CHECK(first_difference(gold["ci"]["gate sparse_acceptance"], perturbed) ==
        "/candidates/0/details/vs_baseline/rel_l2: " + gold["ci"]["gate sparse_acceptance"]["candidates"][0]["details"]
                                                           ["vs_baseline"]["rel_l2"].dump() + " vs " +
            nlohmann::json(fig).dump());
}
