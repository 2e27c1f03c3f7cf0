// A failing group rule names its worst group, ranked against the rule's own
// reference: the gate's line says where, not only how much.
#include "catch.hpp"
#include "gates/judge_for_tests.hpp"
#include "core/block_config.hpp"
#include "gates/accuracy_evidence.hpp"
#include "gates/gate_file.hpp"
#include "gates/metrics.hpp"
#include "gates/verdict.hpp"

using namespace ts;

namespace {

BlockConfig wg_small_config() {
  BlockConfig c;
  c.heads = 3;
  c.head_dim = 4;
  c.grid_t = 2;
  c.grid_h = 2;
  c.grid_w = 64;
  c.segments = {{"video", true, 0, 256}, {"text", false, 256, 16}};
  return c;
}

Tensor wg_ramp(int64_t S, int64_t H, int64_t D) {
  Tensor t({S, H, D}, DType::f64);
  for (size_t i = 0; i < t.data.size(); ++i) t.data[i] = 0.5 + double(i % 7) * 0.25;
  return t;
}

}  // namespace

TEST_CASE("worst group: the breakdown names the head, query block and frame that gave each figure") {
  const BlockConfig c = wg_small_config();
  const Tensor exact = wg_ramp(272, 3, 4);
  Tensor cand = exact;
  for (int64_t s = 128; s < 256; ++s)
    for (int64_t d = 0; d < 4; ++d) cand.data[size_t((s * 3 + 1) * 4 + d)] *= 1.2;  // head 1, frame 1, qblock 1
  const auto w = worst_group_map(compute_breakdown(cand, exact, c));
  CHECK(w.at("rel_l2_worst_head").index == 1);
  CHECK(w.at("gain_error_worst_head").index == 1);
  CHECK(w.at("rel_l2_worst_qblock").index == 1);
  CHECK(w.at("rel_l2_worst_qblock").first_token == 128);
  CHECK(w.at("rel_l2_worst_qblock").last_token == 255);
  CHECK(w.at("rel_l2_worst_frame").index == 1);
  CHECK(w.at("rel_l2_worst_frame").kind == "frame");
}

TEST_CASE("worst group: judge() appends it to a failing group rule, against the rule's reference") {
  const BlockConfig c = wg_small_config();
  const Tensor exact = wg_ramp(272, 3, 4);
  Tensor base = exact, cand = exact;
  for (int64_t s = 0; s < 272; ++s)
    for (int64_t d = 0; d < 4; ++d) {
      cand.data[size_t((s * 3 + 2) * 4 + d)] *= 1.05;  // against exact: head 2 is the scaled one
      base.data[size_t((s * 3 + 0) * 4 + d)] *= 0.9;   // against the baseline head 0 would look worst
    }
  const GateFile g = parse_gate(R"({"schema": "touchstone.gate/1", "name": "t", "rules": [
      {"id": "head_gain", "metric": "gain_error_worst_head", "against": "exact", "max": 0.01},
      {"id": "head_vs_base", "metric": "gain_error_worst_head", "against": "baseline", "max": 0.01}]})",
                                "t.json");
  Evidence ev;
  ev.candidate = "cand";
  add_accuracy_evidence(ev, "attention", cand, base, exact, accuracy_figures(base, exact, &c), &c);
  const CandidateVerdict v = judge_for_test(g, ev, "repro");
  const RuleOutcome& o = v.outcomes[0];
  REQUIRE(o.status == RuleStatus::fail);
  CHECK(o.message.find(": worst head 2, gain 1.05") != std::string::npos);
  REQUIRE(o.worst);
  CHECK(o.worst->index == 2);
  CHECK(o.to_json()["worst"]["index"] == 2);
  const RuleOutcome& b = v.outcomes[1];
  REQUIRE(b.status == RuleStatus::fail);
  CHECK(b.message.find(": worst head 0,") != std::string::npos);
  CHECK(ev.details.contains("worst_vs_exact"));
}
