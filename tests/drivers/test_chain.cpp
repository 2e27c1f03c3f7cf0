// The chain over blocks and denoising steps (drivers/chain.hpp, chain_policy.hpp):
// the baseline stack reproduces the stored inputs, errors compose as docs/chain.md
// says, a planted fault in one block's attention is located to that block, and
// a schedule that is dense there passes the gate while one that is not fails.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "catch.hpp"
#include "core/error.hpp"
#include "drivers/chain.hpp"
#include "drivers/chain_policy.hpp"
#include "drivers/chain_schedule.hpp"
#include "drivers/driver_fixtures.hpp"
#include "fixtures/block/synth_chain.hpp"
#include "reference/sage2_presets.hpp"
#include "report/chain_report.hpp"

namespace {

constexpr int kBlocks = 4, kSteps = 2;

// A tiny chain set, synthesized once per process.
const std::string& tiny_set() {
  static const std::string dir = [] {
    const std::string d = ts::test::driver_scratch() + "/chain_tiny";
    ts::ChainSynthOptions o;
    o.base.preset = "tiny";
    o.base.seed = 5;
    o.blocks = kBlocks;
    o.steps = kSteps;
    ts::synthesize_chain(o, d, {});
    return d;
  }();
  return dir;
}

// The planted fault: the baseline's attention, with head 0 doubled in the
// files of one block (a kernel that goes wrong on one layer's inputs).
class Faulty final : public ts::AttentionBackend {
 public:
  Faulty(std::unique_ptr<ts::AttentionBackend> inner, bool on) : inner_(std::move(inner)), on_(on) {}
  std::string name() const override { return "faulty"; }
  nlohmann::json params() const override { return {{"fault", on_}}; }
  ts::AttentionResult run(const ts::AttentionProblem& p) override {
    ts::AttentionResult r = inner_->run(p);
    if (on_) {
      const int64_t S = r.out.dim(0), H = r.out.dim(1), D = r.out.dim(2);
      for (int64_t s = 0; s < S; ++s)
        for (int64_t d = 0; d < D; ++d) r.out.data[static_cast<size_t>((s * H + 0) * D + d)] *= 2.0;
    }
    return r;
  }

 private:
  std::unique_ptr<ts::AttentionBackend> inner_;
  bool on_;
};

// The fault in one block at every step, or (step >= 0) in that one cell's file only.
ts::ChainOptions with_fault_in_block(int block, int step = -1) {
  ts::ChainOptions o;
  o.make = [block, step](const std::string& spec, const ts::BackendContext& ctx) -> std::unique_ptr<ts::AttentionBackend> {
    if (spec != "faulty") return ts::make_attention_backend(spec, ctx);
    const std::string file = std::filesystem::path(ctx.fixture_path).filename().string();
    const bool on = step < 0 ? file.rfind("block0" + std::to_string(block) + "_", 0) == 0
                             : file == ts::chain_file_name(block, step);
    return std::make_unique<Faulty>(ts::make_attention_backend(ts::sage2_default_spec(), ctx), on);
  };
  return o;
}

std::vector<ts::Schedule> schedules(const std::vector<std::string>& texts) {
  std::vector<ts::Schedule> out;
  for (const auto& t : texts) out.push_back(ts::parse_schedule(t, ts::sage2_default_spec()));
  return out;
}

}  // namespace

TEST_CASE("schedules: first matching rule wins, dense is the baseline, gaps and typos are bad input") {
  const ts::Schedule s = ts::parse_schedule("dense if step<2; sol:tau=2 if block>=4 and step=2-3; sol:tau=1.3", "sage2");
  CHECK(s.at(0, 0) == "sage2");
  CHECK(s.at(7, 1) == "sage2");
  CHECK(s.at(4, 2) == "sol:tau=2");
  CHECK(s.at(3, 2) == "sol:tau=1.3");
  CHECK(s.at(5, 4) == "sol:tau=1.3");
  CHECK(s.specs() == std::vector<std::string>{"sage2", "sol:tau=2", "sol:tau=1.3"});
  CHECK_THROWS_AS(ts::parse_schedule("dense if step<2", "sage2").check_covers(2, 3), ts::InputError);
  CHECK_NOTHROW(ts::parse_schedule("dense if step<2", "sage2").check_covers(2, 2));
  for (const char* bad : {"", "sol:tau=1;", "sol if stp<2; sol", "sol if step<x; sol", "sol if step=3-1; sol",
                          "sol:tau=1 sol:tau=2"})
    CHECK_THROWS_AS(ts::parse_schedule(bad, "sage2"), ts::InputError);
}

TEST_CASE("chain synthesis: block 0 of step 0 is the plain block fixture, later blocks read the one before") {
  const std::string dir = tiny_set();
  ts::SynthOptions so;
  so.preset = "tiny";
  so.seed = 5;
  ts::SynthResult r = ts::synthesize(so);
  ts::synthesize_block(so, r);
  const std::string f00 = dir + "/" + ts::chain_file_name(0, 0);
  CHECK(ts::read_tensor(f00, "/block/x").data == r.dataset("/block/x").data);
  CHECK(ts::read_tensor(f00, "/block/stages/output").data == r.dataset("/block/stages/output").data);
  const std::string f10 = dir + "/" + ts::chain_file_name(1, 0), f01 = dir + "/" + ts::chain_file_name(0, 1);
  CHECK(ts::read_tensor(f10, "/block/x").data == ts::read_tensor(f00, "/block/stages/output").data);
  // Block 1 has weights of its own; step 1 moves block 0's input and its modulation.
  CHECK(ts::read_tensor(f10, "/block/weights/w_qkv").data != ts::read_tensor(f00, "/block/weights/w_qkv").data);
  CHECK(ts::read_tensor(f01, "/block/weights/w_qkv").data == ts::read_tensor(f00, "/block/weights/w_qkv").data);
  CHECK(ts::read_tensor(f01, "/block/x").data != ts::read_tensor(f00, "/block/x").data);
  CHECK(ts::read_tensor(f01, "/block/modulation").data != ts::read_tensor(f00, "/block/modulation").data);
  const ts::ChainSet set = ts::open_chain_set({dir});
  CHECK(set.blocks == kBlocks);
  CHECK(set.steps == kSteps);
  REQUIRE(set.dt);
  CHECK(*set.dt == Approx(1.0 / kSteps));
}

TEST_CASE("a chain set with a missing or repeated cell is bad input before any block runs") {
  const ts::ChainSet set = ts::open_chain_set({tiny_set()});
  std::vector<std::string> files = set.files;
  files.erase(files.begin() + 3);
  CHECK_THROWS_WITH(ts::open_chain_set(files), Catch::Contains("block 3 of step 0 is missing"));
  files = set.files;
  files.push_back(set.files[1]);
  CHECK_THROWS_WITH(ts::open_chain_set(files), Catch::Contains("is also"));
  CHECK_THROWS_WITH(ts::run_chains(set, schedules({"stored:exact"}), {}), Catch::Contains("stored output"));
  CHECK_THROWS_AS(ts::run_chains(set, schedules({"sol:tau=1.3,bogus=1"}), {}), ts::InputError);
}

TEST_CASE("the baseline stack reproduces every stored input; an all-dense schedule has no error") {
  const ts::ChainSet set = ts::open_chain_set({tiny_set()});
  const ts::ChainRun run = ts::run_chains(set, schedules({"dense"}), {});
  REQUIRE(run.baseline.size() == static_cast<size_t>(kBlocks * kSteps));
  for (const auto& b : run.baseline) CHECK(b.matches_fixture);
  for (const auto& c : run.chains[0].cells) {
    CHECK(c.dense);
    CHECK(*c.vs_baseline.rel_l2 == 0.0);
    CHECK(c.own == 0.0);
  }
  // Every cell of the exact stack runs once, the baseline's once, and a dense chain shares the baseline's.
  CHECK(run.block_runs == 2 * kBlocks * kSteps);
}

TEST_CASE("errors compose: e_out <= own + carried at every cell; a block's input error is the last one's output error") {
  const ts::ChainSet set = ts::open_chain_set({tiny_set()});
  const ts::ChainRun run = ts::run_chains(set, schedules({"sol:tau=1.3", "dense if step<1; sol:tau=2"}), {});
  for (const auto& ch : run.chains) {
    REQUIRE(ch.cells.size() == static_cast<size_t>(kBlocks * kSteps));
    bool any_carried = false;
    for (size_t i = 0; i < ch.cells.size(); ++i) {
      const ts::ChainCell& c = ch.cells[i];
      INFO(ch.schedule.text << " block " << c.block << " step " << c.step);
      const double e = *c.vs_baseline.rel_l2;
      CHECK(e <= c.own + c.carried + 1e-12);
      CHECK(e >= std::abs(c.own - c.carried) - 1e-12);
      if (c.block > 0) CHECK(c.in_error == Approx(*ch.cells[i - 1].vs_baseline.rel_l2).epsilon(1e-9));
      if (c.growth) {
        CHECK(*c.growth == Approx(c.carried / c.in_error));
        any_carried = true;
      }
    }
    CHECK(any_carried);
  }
  // The second schedule is dense in step 0 (no error there) and carries step 1's error only.
  const auto& second = run.chains[1].cells;
  for (int b = 0; b < kBlocks; ++b) CHECK(*second[static_cast<size_t>(b)].vs_baseline.rel_l2 == 0.0);
  CHECK(*second.back().vs_baseline.rel_l2 > 0.0);
}

TEST_CASE("a planted fault in one block's attention is located to that block") {
  const ts::ChainSet set = ts::open_chain_set({tiny_set()});
  for (int fault : {1, 2}) {
    const ts::ChainRun run = ts::run_chains(set, schedules({"faulty"}), with_fault_in_block(fault));
    const auto& cells = run.chains[0].cells;
    const ts::ChainCell* worst = &cells.front();
    for (const auto& c : cells) {
      INFO("fault in block " << fault << ", cell block " << c.block << " step " << c.step);
      if (c.own > worst->own) worst = &c;
      if (c.block == fault) {
        CHECK(c.own > 0.05);
      } else {
        CHECK(c.own == 0.0);  // the same bits as the baseline wherever the fault is not
      }
      if (c.block < fault && c.step == 0) CHECK(*c.vs_baseline.rel_l2 == 0.0);
    }
    CHECK(worst->block == fault);
  }
}

TEST_CASE("a planted fault at one block of one step is located to that cell, and carried from there on") {
  const ts::ChainSet set = ts::open_chain_set({tiny_set()});
  for (const auto& [fb, fs] : {std::pair{2, 0}, std::pair{1, 1}}) {
    const ts::ChainRun run = ts::run_chains(set, schedules({"faulty"}), with_fault_in_block(fb, fs));
    const auto& cells = run.chains[0].cells;
    REQUIRE(cells.size() == static_cast<size_t>(kBlocks * kSteps));
    const ts::ChainCell* worst = &cells.front();
    for (const auto& c : cells) {
      INFO("fault at block " << fb << " step " << fs << ", cell block " << c.block << " step " << c.step);
      if (c.own > worst->own) worst = &c;
      const bool at = c.block == fb && c.step == fs, before = c.step < fs || (c.step == fs && c.block < fb);
      if (at) {
        CHECK(c.own > 0.05);
      } else {
        CHECK(c.own == 0.0);  // the same block of another step, and every other block, adds nothing
      }
      if (before) CHECK(*c.vs_baseline.rel_l2 == 0.0);
      if (!at && !before) CHECK(c.carried > 0.0);  // the error travels on as carried, never as own
    }
    CHECK(worst->block == fb);
    CHECK(worst->step == fs);
  }
  // Dense exactly at that cell passes; dense at the same block of the other step, or at the other
  // cells of that step, does not: the verdict follows the cell, not the block or the step.
  ts::ChainJudgeOptions jo;
  const ts::ChainJudgement j = ts::judge_chains(
      set, schedules({"faulty", "dense if block=1 and step=1; faulty", "dense if block=1 and step=0; faulty"}),
      with_fault_in_block(1, 1), jo);
  REQUIRE(j.cases.run.candidates.size() == 3);
  CHECK(j.cases.run.candidates[0].verdict == ts::Verdict::reject);
  CHECK(j.cases.run.candidates[1].verdict == ts::Verdict::accept);
  CHECK(j.cases.run.candidates[2].verdict == ts::Verdict::reject);
  for (const auto& c : j.chain.chains[1].cells) CHECK(*c.vs_baseline.rel_l2 == 0.0);
  CHECK_THAT(ts::chain_text(j, 100), Catch::Contains("largest own error: block 1 of step 1 (own"));
}

TEST_CASE("a schedule that is dense where the planted fault is passes the gate; one that is not fails") {
  const ts::ChainSet set = ts::open_chain_set({tiny_set()});
  ts::ChainJudgeOptions jo;
  const ts::ChainJudgement j =
      ts::judge_chains(set, schedules({"faulty", "dense if block=2; faulty", "dense if block=1; faulty"}),
                       with_fault_in_block(2), jo);
  REQUIRE(j.cases.run.candidates.size() == 3);
  CHECK(j.cases.run.candidates[0].verdict == ts::Verdict::reject);
  CHECK(j.cases.run.candidates[1].verdict == ts::Verdict::accept);
  CHECK(j.cases.run.candidates[2].verdict == ts::Verdict::reject);
  CHECK(j.exit_code() == 1);
  // The verdict is the gate's: the rule that failed names the final block's output.
  bool named = false;
  for (const auto& o : j.cases.run.candidates[0].outcomes)
    if (o.id == "sage_like_at_end") named = o.status == ts::RuleStatus::fail && o.tensor == "output";
  CHECK(named);
  CHECK(j.cases.run.candidates[0].repro.find("touchstone chain") == 0);
  // The faulty kernel is no emulation, but the baseline is: its time is shown, never judged.
  for (const auto& o : j.cases.run.candidates[1].outcomes)
    if (o.id == "faster") CHECK(o.status == ts::RuleStatus::missing);
}

TEST_CASE("policy search: the cheapest ACCEPTed schedule, the frontier fastest first") {
  const ts::ChainSet set = ts::open_chain_set({tiny_set()});
  const auto texts = ts::policy_schedules(kSteps, {1.0, 3.0}, "sol", "int8_qk");
  REQUIRE(texts.size() == 2 * kSteps + 1);
  CHECK(texts[1] == "dense if step<1; sol:tau=1,precision=int8_qk");
  CHECK(texts.back() == "dense");
  ts::ChainJudgeOptions jo;
  ts::ChainJudgement j = ts::judge_chains(set, schedules(texts), {}, jo);
  j.search = true;
  REQUIRE(j.chosen);
  // The all-dense schedule is always ACCEPTed; anything chosen costs no more.
  CHECK(j.chain.chains[*j.chosen].work() <= 1.0);
  CHECK(j.cases.run.candidates.back().verdict == ts::Verdict::accept);
  REQUIRE_FALSE(j.frontier.empty());
  for (size_t k = 1; k < j.frontier.size(); ++k) {
    const auto& a = j.chain.chains[j.frontier[k - 1]], &b = j.chain.chains[j.frontier[k]];
    CHECK(a.work() <= b.work());
    CHECK(*a.last().vs_baseline.rel_l2 >= *b.last().vs_baseline.rel_l2);  // cheaper costs accuracy
  }
  for (size_t i = 0; i < j.chain.chains.size(); ++i)
    if (j.cases.run.candidates[i].verdict == ts::Verdict::accept) CHECK(j.chain.chains[i].work() >= j.chain.chains[*j.chosen].work());
  // Equal cost goes to the more accurate, so the chosen schedule is always a frontier point, and
  // the table lists schedules in the order the choice used.
  CHECK(std::find(j.frontier.begin(), j.frontier.end(), *j.chosen) != j.frontier.end());
  for (size_t i = 0; i < j.chain.chains.size(); ++i)
    if (j.cases.run.candidates[i].verdict == ts::Verdict::accept &&
        j.chain.chains[i].work() == j.chain.chains[*j.chosen].work())
      CHECK(*j.chain.chains[i].last().vs_baseline.rel_l2 >= *j.chain.chains[*j.chosen].last().vs_baseline.rel_l2);
  REQUIRE(j.ranked.size() == j.chain.chains.size());
  CHECK(j.ranked.front() == *j.chosen);
  const std::string html = ts::chain_html(j);
  CHECK(html.find("<svg") != std::string::npos);
  CHECK(ts::chain_json(j)["chosen"].is_string());
}

TEST_CASE("policy with timed attention: faster is judged on summed time and the search ranks by it") {
  // The gate opts the emulations' times in (time_emulations), so speed is judged, not shown only;
  // which schedule is faster on this host is not asserted, only that each one was judged.
  const std::string gate = ts::test::driver_scratch() + "/chain_timed.json";
  std::ofstream(gate) << R"({"schema": "touchstone.gate/1", "name": "chain_timed", "tensor": "output",
    "time_emulations": true, "rules": [
    {"id": "sage_like_at_end", "metric": "rel_l2", "against": "baseline", "max": 0.15},
    {"id": "faster", "metric": "speedup", "against": "baseline", "min": 1.0, "optional": true}]})";
  const ts::ChainSet set = ts::open_chain_set({tiny_set()});
  ts::ChainJudgeOptions jo;
  jo.gate = gate;
  ts::ChainJudgement j = ts::judge_chains(set, schedules(ts::policy_schedules(kSteps, {3.0}, "sol", "int8_qk")), {}, jo);
  j.search = true;
  REQUIRE(j.chain.chains.size() == kSteps + 1);
  for (size_t i = 0; i < j.chain.chains.size(); ++i) {
    INFO(j.chain.chains[i].schedule.text);
    CHECK(j.time_is_real[i]);
    const ts::RuleOutcome* faster = nullptr;
    for (const auto& o : j.cases.run.candidates[i].outcomes)
      if (o.id == "faster") faster = &o;
    REQUIRE(faster);
    CHECK(faster->status != ts::RuleStatus::missing);
    REQUIRE(faster->figure);
    CHECK(std::isfinite(*faster->figure));
    CHECK(*faster->figure > 0);
    REQUIRE(faster->interval);
    CHECK(faster->interval->lower <= *faster->figure);
    CHECK(*faster->figure <= faster->interval->upper);
    CHECK(j.cases.run.candidates[i].clock == "host_steady");
  }
  // All-dense runs the baseline's own blocks: speedup exactly 1 at every cell, which `min 1` passes.
  const ts::RuleOutcome* dense_faster = nullptr;
  for (const auto& o : j.cases.run.candidates.back().outcomes)
    if (o.id == "faster") dense_faster = &o;
  REQUIRE(dense_faster);
  CHECK(dense_faster->status == ts::RuleStatus::pass);
  CHECK(*dense_faster->figure == 1.0);
  // The cost the search ranks by and the frontier's order are the summed times, not the work.
  for (size_t k = 1; k < j.ranked.size(); ++k)
    CHECK(j.chain.chains[j.ranked[k - 1]].attention_ms() <= j.chain.chains[j.ranked[k]].attention_ms());
  for (size_t k = 1; k < j.frontier.size(); ++k)
    CHECK(j.chain.chains[j.frontier[k - 1]].attention_ms() <= j.chain.chains[j.frontier[k]].attention_ms());
  REQUIRE(j.chosen);  // all-dense at least
  for (size_t i : j.ranked) {
    if (i == *j.chosen) break;
    CHECK(j.cases.run.candidates[i].verdict != ts::Verdict::accept);  // the cheapest ACCEPTed by time
  }
  // Emulations' times, judged because the gate asks: said so, never called a kernel's.
  CHECK_THAT(ts::chain_text(j, 100),
             Catch::Contains("cheapest first (summed attention time of emulations, judged as the gate's time_emulations asks)"));
  CHECK_THAT(ts::chain_text(j, 100), !Catch::Contains("kernel attention time"));
  CHECK(ts::chain_json(j)["chains"][0]["time_note"] ==
        "emulation times, summed over cells: judged, as the gate's time_emulations asks");
}

TEST_CASE("policy search: a tau given twice is bad input, not the same schedule run twice") {
  CHECK_THROWS_WITH(ts::policy_schedules(kSteps, {1.3, 2.0, 1.3}, "sol", "int8_qk"),
                    Catch::Contains("--tau 1.3 given twice"));
  CHECK(ts::policy_schedules(kSteps, {1.3, 2.0}, "sol", "").size() == 2 * kSteps + 1);
}

TEST_CASE("the chain page draws at most six step lines, spread from the first step to the last") {
  const std::string d = ts::test::driver_scratch() + "/chain_7_steps";
  ts::ChainSynthOptions o;
  o.base.preset = "tiny";
  o.base.seed = 5;
  o.blocks = 1;
  o.steps = 7;
  if (!std::filesystem::exists(d)) ts::synthesize_chain(o, d, {});
  ts::ChainJudgeOptions jo;
  jo.accuracy_only = true;
  const std::string html = ts::chain_html(ts::judge_chains(ts::open_chain_set({d}), schedules({"sol:tau=1.3"}), {}, jo));
  for (int s : {0, 1, 2, 4, 5, 6}) CHECK_THAT(html, Catch::Contains(">step " + std::to_string(s) + "<"));
  CHECK_THAT(html, !Catch::Contains(">step 3<"));  // six colours for six lines, none shared
  CHECK_THAT(html, Catch::Contains("6 of 7 steps"));
  CHECK_THAT(html, !Catch::Contains("series s6"));
}
