// touchstone bench io: every step timed beside its floor, in one run; bad input refused first.
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "catch.hpp"
#include "cli_runner.hpp"

using ts::test::run_cli;

TEST_CASE("bench io times each stored step beside its floor", "[cli][bench]") {
  const std::string f = ts::test::scratch_dir() + "/bench_io.h5";
  std::filesystem::remove(f);
  std::filesystem::remove_all(f + ".outputs");
  REQUIRE(run_cli("fixture synth --preset tiny --seed 5 -o " + f).code == 0);
  for (const char* b : {"exact", "sage2", "sol --tau 1.3"}) REQUIRE(run_cli("reference " + f + " --backend " + b).code == 0);
  const std::string j = ts::test::scratch_dir() + "/bench_io.json";
  const auto r = run_cli("bench io " + f + " --baseline sage2_sm121 --exact exact --json " + j);
  INFO(r.out << r.err);
  REQUIRE(r.code == 0);
  CHECK(r.out.find("ratio") != std::string::npos);
  const nlohmann::json out = nlohmann::json::parse(ts::test::read_file(j));
  // One candidate: the many-candidate gate would repeat the one-candidate row.
  REQUIRE(out["steps"].size() == 4);
  CHECK(out["candidates"] == 1);  // every output but the baseline and exact
  for (const auto& s : out["steps"]) {
    INFO(s.dump());
    CHECK(s["wall_s"].get<double>() > 0);
    CHECK(s["floor_s"].get<double>() > 0);
    CHECK(std::isfinite(s["ratio"].get<double>()));
    CHECK(s["bytes"].get<double>() > 0);
    CHECK((s["exit_code"] == 0 || s["exit_code"] == 1));
  }
  for (const char* rate : {"page_cache_gbs", "digest_gbs", "metric_pairs_per_s"}) CHECK(out["rates"][rate].get<double>() > 0);

  const auto missing = run_cli("bench io " + f + " --baseline nope --exact exact");
  CHECK(missing.code == 2);
  CHECK(missing.err.find("no stored output 'nope'") != std::string::npos);
  CHECK(run_cli("bench io " + f).code == 2);  // --baseline is required
}

TEST_CASE("bench io takes stored:NAME, keeps stdout JSON alone, and skips stage sets", "[cli][bench]") {
  const std::string f = ts::test::scratch_dir() + "/bench_io_block.h5";
  std::filesystem::remove(f);
  std::filesystem::remove_all(f + ".outputs");
  REQUIRE(run_cli("fixture synth --preset tiny --with-block --seed 5 -o " + f).code == 0);
  for (const char* b : {"exact", "sage2", "sol --tau 1.3", "sol --tau 2"})
    REQUIRE(run_cli("reference " + f + " --backend " + b).code == 0);
  // A block run's stage set has no attention output: not a candidate by default, refused by name.
  REQUIRE(run_cli("reference " + f + " --block --attention sage2").code == 0);
  const auto r = run_cli("bench io " + f + " --baseline stored:sage2_sm121 --exact stored:exact --json");
  INFO(r.out << r.err);
  REQUIRE(r.code == 0);
  const nlohmann::json out = nlohmann::json::parse(r.out);  // the table went to stderr
  CHECK(r.err.find("ratio") != std::string::npos);
  CHECK(out["candidates"] == 2);
  REQUIRE(out["steps"].size() == 5);
  CHECK(out["steps"][4]["step"] == "gate, 2 stored candidates");
  const auto stages = run_cli("bench io " + f + " --baseline sage2_sm121 -c block_fp64_sage2_sm121");
  CHECK(stages.code == 2);
  CHECK(stages.err.find("--candidate block_fp64_sage2_sm121: ") != std::string::npos);
  CHECK(stages.err.find("has no attention output") != std::string::npos);
}
