// The stage comparison as a library: every judged stage goes through the
// same judge() as `touchstone gate`, with the stage table's growth bounds.
#include <fstream>

#include "catch.hpp"
#include "core/error.hpp"
#include "driver_fixtures.hpp"
#include "drivers/block_run.hpp"
#include "drivers/stage_comparison.hpp"
#include "report/stage_report.hpp"

namespace {

const std::string& block_fixture() {
  static const std::string f = [] {
    // tiny, not ci: the two blocks take seconds under ASan (CI's sanitizer job), not minutes.
    const std::string p = ts::test::synth_fixture("tiny_block", "tiny", true);
    ts::run_block_reference(p, "bf16", "te", "exact");
    ts::run_block_reference(p, "fp64", "te", "exact");
    return p;
  }();
  return f;
}

std::string write_gate(const std::string& name, const std::string& rules) {
  const std::string p = ts::test::driver_scratch() + "/" + name + ".json";
  std::ofstream(p) << R"({"schema": "touchstone.gate/1", "name": ")" << name << R"(", "rules": [)" << rules << "]}";
  return p;
}

const ts::StageRow& row(const ts::StageComparison& c, const std::string& stage) {
  for (const auto& r : c.rows)
    if (r.stage == stage) return r;
  FAIL("no row " << stage);
  return c.rows.front();
}

}  // namespace

TEST_CASE("stages: bf16 rounding of the same block against float64 names no stage as bad") {
  const ts::StageComparison c = ts::compare_stages(block_fixture(), "block_bf16_exact", "block_fp64_exact", {});
  INFO(ts::render_stage_table(c));
  CHECK(c.compared == 14);
  CHECK(c.first_failing.empty());
  CHECK(c.first_inconclusive.empty());
  CHECK(c.exit_code() == 0);
  // norm1 is one bf16 rounding of float64: above the old floor of 1e-3, within the rounding term.
  const auto& n1 = row(c, "norm1");
  REQUIRE(n1.metrics);
  CHECK(*n1.metrics->rel_l2 > 1e-3);
  CHECK(n1.status() == "pass");
  // The growth rule of the shipped default gate decided, through judge().
  bool growth = false;
  for (const auto& o : n1.verdict->outcomes)
    if (o.id == "growth") {
      growth = true;
      CHECK(o.bound.find("rounding") != std::string::npos);
    }
  CHECK(growth);
  CHECK(c.run.gate.source == "builtin:stages-default");
}

TEST_CASE("stages: an unsatisfiable max_ratio_to_baseline fails, and unnamed stages are not judged") {
  const std::string g = write_gate("tight", R"({"id": "tight", "metric": "rel_l2", "against": "exact",
      "max_ratio_to_baseline": 1e-6, "tensor": "qkv"})");
  ts::StageComparisonOptions o;
  o.gate = g;
  o.exact = "block_fp64_exact";
  const ts::StageComparison c = ts::compare_stages(block_fixture(), "block_bf16_exact", "observed", o);
  INFO(ts::render_stage_table(c));
  CHECK(c.exit_code() == 1);
  CHECK(c.first_failing == "qkv");
  CHECK(row(c, "qkv").status() == "fail");
  CHECK(row(c, "norm1").status() == "–");
  CHECK(c.run.candidates.size() == 1);
  CHECK(ts::render_stage_table(c).find("norm1") != std::string::npos);

  // Without an exact stage set the rule cannot be judged: INCONCLUSIVE, never a pass.
  const ts::StageComparison m = ts::compare_stages(block_fixture(), "block_bf16_exact", "observed", {g, ""});
  CHECK(m.exit_code() == 1);
  CHECK(row(m, "qkv").status() == "inconclusive");
}

TEST_CASE("stages: a speed rule on stages is missing, not a pass") {
  const std::string g = write_gate("speedy", R"({"id": "fast", "metric": "speedup", "min": 1, "tensor": "fc1"})");
  const ts::StageComparison c = ts::compare_stages(block_fixture(), "block_bf16_exact", "block_bf16_exact", {g, ""});
  CHECK(c.exit_code() == 1);
  CHECK(row(c, "fc1").status() == "inconclusive");
  CHECK(row(c, "fc1").verdict->outcomes.front().message.find("no timings") != std::string::npos);
}

TEST_CASE("stages: a growth rule in a gate file, and bad stage sets") {
  // A zero growth factor with no floor: a bf16 replay against float64 fails where rounding is not allowed.
  const std::string g = write_gate("nogrowth", R"({"id": "g", "metric": "rel_l2", "tensor": "norm1",
      "growth": {"floor": 0, "factor": 0, "rounding": false}})");
  const ts::StageComparison c = ts::compare_stages(block_fixture(), "block_bf16_exact", "block_fp64_exact", {g, ""});
  CHECK(c.first_failing == "norm1");
  CHECK_THROWS_AS(ts::compare_stages(block_fixture(), "recompute", "observed", {}), ts::InputError);
  CHECK_THROWS_AS(ts::compare_stages(block_fixture(), "observed", "no_such_run", {}), ts::InputError);
  CHECK_THROWS_AS(ts::compare_stages(block_fixture(), "observed", "block_fp64_exact", {"no_such_gate", ""}),
                  ts::InputError);
}
