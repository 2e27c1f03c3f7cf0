// Every figure, verdict and word of the JSON that chain, policy, scan, triage and
// compare --stages print on `tiny` fixtures is the one touchstone 4dcf1f3 wrote, when the
// drivers still wrote it themselves (tests/tools/data/result_json_tiny.json), but for
// timings and the scratch and plugin folders' paths: the writers moved to report/, and
// what a user's scripts read must not move with them. TOUCHSTONE_WRITE_GOLDEN=1 writes
// that file instead of comparing (only ever on purpose: the diff is the review).
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "catch.hpp"
#include "cli_runner.hpp"
#include "json_difference.hpp"

namespace {

using ts::test::first_difference;
using ts::test::run_cli;

std::string golden_file() { return std::string(TOUCHSTONE_SOURCE_DIR) + "/tests/tools/data/result_json_tiny.json"; }

void make(const std::string& args) {
  const auto r = run_cli(args);
  INFO(args << "\n" << r.err);
  REQUIRE(r.code == 0);
}

nlohmann::json reports() {
  const std::string dir = ts::test::scratch_dir() + "/result_json";
  std::filesystem::create_directories(dir);
  const std::string chains = dir + "/chain", f = dir + "/tiny_block.h5";
  make("fixture synth --preset tiny --seed 2 --blocks 2 --steps 2 -o " + chains);
  make("fixture synth --force --preset tiny --seed 3 --with-block -o " + f);
  make("reference " + f + " --block --linear nvfp4 --recipe te --attention sage2:preset=sm121");
  make("reference " + f + " --block --linear fp64 --attention exact");

  nlohmann::json out = nlohmann::json::object();
  auto add = [&](const std::string& key, const std::string& args) {
    const auto r = run_cli(args + " --json");
    INFO(args << "\n" << r.err);
    REQUIRE((r.code == 0 || r.code == 1));
    nlohmann::json j = nlohmann::json::parse(r.out);
    // wall_s: the chain's wall time.
    ts::test::normalise_report(j, {dir, TOUCHSTONE_PLUGIN_DIR}, {"wall_s"});
    out[key] = j;
  };
  add("chain", "chain " + chains + " --candidate sol:tau=3 --candidate 'dense if step<1; sol:tau=1.3' --candidate dense");
  add("policy", "policy " + chains + " --tau 1.3,3 --accuracy-only");
  const std::string plugins = std::string("plugin:") + TOUCHSTONE_PLUGIN_DIR;
  add("scan cliff", "scan --candidate " + plugins + "/libtsk_cliff.so,cliff=1500 --from 128 --to 2048 --heads 1 --head-dim 32");
  add("scan nan", "scan --candidate " + plugins + "/libtsk_bad_nan.so --from 256 --to 2048 --points 4");
  add("scan worker", "scan --worker 'while read cmd path; do [ \"$cmd\" = run ] && echo \"error no kernel\"; done' "
                     "--from 64 --to 256 --heads 1 --head-dim 32");
  add("triage", "triage " + f + " --candidate sol:tau=1.3");
  add("compare --stages replay", "compare " + f + " observed block_nvfp4-te_sage2_sm121 --stages --exact block_fp64_exact");
  add("compare --stages recompute", "compare " + f + " observed recompute --stages");
  return out;
}

}  // namespace

TEST_CASE("JSON of chain policy scan triage and compare --stages keeps every figure and key") {
  nlohmann::json got = reports();
  got["made_by"] = "touchstone 4dcf1f3 (tests/tools/test_result_json_cli.cpp, TOUCHSTONE_WRITE_GOLDEN=1)";
  if (ts::test::write_golden_if_asked(golden_file(), got)) {
    WARN("wrote " << golden_file());
    return;
  }
  const nlohmann::json gold = nlohmann::json::parse(ts::test::read_file(golden_file()));
  REQUIRE(gold.size() == got.size());
  for (auto it = gold.begin(); it != gold.end(); ++it) {
    INFO(it.key());
    CHECK(first_difference(it.value(), got[it.key()]) == "");
  }
  // A key a writer drops is a difference, not a pass.
  nlohmann::json less = gold["chain"];
  less["chains"][0]["cells"][0].erase("carried");
  CHECK(first_difference(gold["chain"], less) == "/chains/0/cells/0/carried (missing)");
}
