// A/A: a kernel judged against itself must be neither faster nor slower.
// Two parts:
// 1. The rate: 20 000 seeded A/A comparisons with per-round drift, through the
//    intervals the gate uses (gates/speed_interval.hpp), at the shipped gates'
//    confidence 0.98: false "faster" and false "slower" each at most 1 %.
//    Deterministic: a fixed seed and a generator the standard specifies
//    (std::mt19937_64) with our own Box-Muller, not std::normal_distribution.
// 2. The gate: one real host kernel (float32 exact attention on `tiny`) timed on
//    the host clock in 5 separate timing runs and stored as five outputs; every
//    ordered pair (20) gated by sparse_acceptance and sage_compat: none is ACCEPTed
//    on `faster` or REJECTed on `not_slower`. Deterministic by construction:
//    samples of different timing runs are never judged on one run a side, so the
//    outcome does not depend on the times. Then the same kernel twice, interleaved
//    in ONE timing run (rounds A B, B A, ...): judged, and not faster; the false
//    rate there is P(all 10 rounds favour one side) = 2^-10 per pair, the
//    sign test's exact level, so this part flakes about once in 500 CI runs at most.
#include <cmath>
#include <random>

#include "catch.hpp"
#include "driver_fixtures.hpp"
#include "drivers/gate_on_fixture.hpp"
#include "drivers/speed_evidence.hpp"
#include "fixtures/attention_inputs.hpp"
#include "gates/paired_timing.hpp"
#include "gates/speed_interval.hpp"
#include "kernels_under_test/registry.hpp"

namespace {

struct Normal {
  std::mt19937_64 g;
  explicit Normal(uint64_t seed) : g(seed) {}
  double operator()() {
    const double u1 = (static_cast<double>(g() >> 11) + 0.5) / 9007199254740992.0;
    const double u2 = (static_cast<double>(g() >> 11) + 0.5) / 9007199254740992.0;
    return std::sqrt(-2 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }
};

ts::DatasetWrite timings(const std::string& name, const std::vector<double>& ms, const std::string& run) {
  ts::Tensor t({static_cast<int64_t>(ms.size())}, ts::DType::f64);
  t.data = ms;
  return {"/timings/" + name, std::move(t),
          {{"clock", ts::kClockHost}, {"timing_run", run}, {"device", "cpu"}}};
}

const ts::RuleOutcome* aa_rule(const ts::CandidateVerdict& v, const std::string& id) {
  for (const auto& o : v.outcomes)
    if (o.id == id) return &o;
  return nullptr;
}

}  // namespace

TEST_CASE("A/A: the speed intervals' false-verdict rate is at most 1 % each way at confidence 0.98") {
  Normal n(20261203);
  const int trials = 20000;
  for (int pairs : {10, 20}) {
    int faster = 0, slower = 0, judged = 0;
    for (int t = 0; t < trials; ++t) {
      std::vector<double> r;
      for (int i = 0; i < pairs; ++i) {
        const double drift = 0.08 * n();  // the round's machine state, shared by both sides
        r.push_back(std::exp(0.03 * n() + drift) / std::exp(0.03 * n() + drift));
      }
      const auto iv = ts::sign_interval_paired(r, 0.98);
      REQUIRE(iv);
      ++judged;
      faster += iv->lower >= 1.0;
      slower += iv->upper < 1.0;
    }
    INFO("pairs " << pairs << ": false faster " << faster << ", false slower " << slower << " of " << judged);
    CHECK(faster <= trials / 100);
    CHECK(slower <= trials / 100);
  }
  // Runs a side, each with its own level (run-to-run variance 5 %).
  int faster = 0, slower = 0;
  for (int t = 0; t < trials; ++t) {
    std::vector<double> a, b;
    for (int i = 0; i < 3; ++i) a.push_back(20 * std::exp(0.05 * n()));
    for (int i = 0; i < 3; ++i) b.push_back(20 * std::exp(0.05 * n()));
    const ts::Interval iv = ts::welch_interval_runs(b, a, 0.98);
    faster += iv.lower >= 1.0;
    slower += iv.upper < 1.0;
  }
  INFO("runs: false faster " << faster << ", false slower " << slower);
  CHECK(faster <= trials / 100);
  CHECK(slower <= trials / 100);
  // Too few pairs give no interval at all rather than a narrow one.
  CHECK_FALSE(ts::sign_interval_paired({1.1, 1.2, 1.3}, 0.98));
  CHECK(ts::min_pairs_for(0.98) == 7);
}

TEST_CASE("A/A: one kernel in 5 separate timing runs is never judged faster or slower than itself") {
  const std::string f = ts::test::synth_fixture("aa_runs", "tiny", false);
  const ts::Fixture fx = ts::load_fixture(f);
  const ts::AttentionProblem p = ts::attention_problem(fx);
  auto kernel = ts::make_attention_backend("exact:precision=fp32", {f});
  std::vector<ts::DatasetWrite> w;
  ts::SteadyClockTimer clock;
  for (int run = 0; run < 5; ++run) {
    std::vector<double> ms;
    ts::Tensor out;
    for (int i = 0; i < 10; ++i) {
      clock.start();
      out = kernel->run(p).out;
      ms.push_back(clock.stop_ms());
    }
    const std::string name = "run" + std::to_string(run);
    w.push_back({"/outputs/" + name + "/attention", out, ts::output_attrs(name, {}, std::nullopt)});
    w.push_back(timings(name, ms, "aa-run-" + std::to_string(run)));
  }
  ts::append_datasets(f, w);
  int pairs = 0;
  for (int a = 0; a < 5; ++a)
    for (int b = 0; b < 5; ++b) {
      if (a == b) continue;
      ++pairs;
      const std::string base = "stored:run" + std::to_string(a), cand = "stored:run" + std::to_string(b);
      ts::GateRunOptions o;
      const ts::CandidateVerdict sa =
          ts::run_gate_on_fixture(ts::load_gate("sparse_acceptance"), f, base, {cand}, o).candidates.at(0);
      const ts::CandidateVerdict sc =
          ts::run_gate_on_fixture(ts::load_gate("sage_compat"), f, base, {cand}, o).candidates.at(0);
      REQUIRE(aa_rule(sa, "faster"));
      REQUIRE(aa_rule(sc, "not_slower"));
      CHECK(aa_rule(sa, "faster")->status == ts::RuleStatus::missing);
      CHECK(aa_rule(sa, "faster")->message.find("different timing runs") != std::string::npos);
      CHECK(sa.verdict != ts::Verdict::accept);
      CHECK(aa_rule(sc, "not_slower")->status == ts::RuleStatus::missing);
      CHECK(sc.verdict != ts::Verdict::reject);
    }
  CHECK(pairs == 20);
}

TEST_CASE("A/A: the same kernel twice, interleaved in one timing run, is judged and not faster") {
  const std::string f = ts::test::synth_fixture("aa_interleaved", "tiny", false);
  const ts::Fixture fx = ts::load_fixture(f);
  const ts::AttentionProblem p = ts::attention_problem(fx);
  auto kernel = ts::make_attention_backend("exact:precision=fp32", {f});
  ts::SteadyClockTimer clock;
  std::vector<double> a, b;
  ts::Tensor out = kernel->run(p).out;
  for (int round = 0; round < 10; ++round)
    for (int side = 0; side < 2; ++side) {
      const bool a_now = (side == 0) == (round % 2 == 0);
      clock.start();
      out = kernel->run(p).out;
      (a_now ? a : b).push_back(clock.stop_ms());
    }
  ts::append_datasets(f, {{"/outputs/ka/attention", out, ts::output_attrs("ka", {}, std::nullopt)},
                          {"/outputs/kb/attention", out, ts::output_attrs("kb", {}, std::nullopt)},
                          timings("ka", a, "aa-one-run"),
                          timings("kb", b, "aa-one-run")});
  for (const auto& [base, cand] : {std::pair{"stored:ka", "stored:kb"}, std::pair{"stored:kb", "stored:ka"}}) {
    ts::GateRunOptions o;
    const ts::CandidateVerdict sa =
        ts::run_gate_on_fixture(ts::load_gate("sparse_acceptance"), f, base, {cand}, o).candidates.at(0);
    const ts::CandidateVerdict sc =
        ts::run_gate_on_fixture(ts::load_gate("sage_compat"), f, base, {cand}, o).candidates.at(0);
    INFO(aa_rule(sa, "faster")->message);
    CHECK(aa_rule(sa, "faster")->interval);  // judged: paired by round
    CHECK(aa_rule(sa, "faster")->status != ts::RuleStatus::pass);
    CHECK(aa_rule(sc, "not_slower")->status != ts::RuleStatus::fail);
    CHECK(aa_rule(sa, "faster")->message.find("one timing run") != std::string::npos);
  }
}
