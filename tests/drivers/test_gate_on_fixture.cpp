// The gate on a fixture as a library: timing provenance (a speed rule is
// judged only on >= 3 samples a side taken on one clock) and the choice of
// the exact reference.
#include <cstdlib>

#include "catch.hpp"
#include "core/error.hpp"
#include "driver_fixtures.hpp"
#include "drivers/gate_on_fixture.hpp"
#include "drivers/run_estimate.hpp"
#include "fixtures/attention_inputs.hpp"
#include "kernels_under_test/registry.hpp"

namespace {

// A tiny fixture with stored outputs: "fast" (the sage2 output, so it is
// Sage-like) and "slow" (the same), whose /timings the tests set.
std::string fixture_with(const std::string& name, const std::vector<ts::DatasetWrite>& timings) {
  const std::string f = ts::test::synth_fixture(name, "tiny", false);
  const ts::Fixture fx = ts::load_fixture(f);
  auto sage = ts::make_attention_backend("sage2:preset=sm121", {f});
  const ts::Tensor out = sage->run(ts::attention_problem(fx)).out;
  std::vector<ts::DatasetWrite> w = {{"/outputs/fast/attention", out, ts::output_attrs("fast", {}, std::nullopt)},
                                     {"/outputs/slow/attention", out, ts::output_attrs("slow", {}, std::nullopt)}};
  for (const auto& t : timings) w.push_back(t);
  ts::append_datasets(f, w);
  return f;
}

ts::DatasetWrite timing(const std::string& name, std::vector<double> ms, const std::string& clock,
                        const std::string& run = "one-run") {
  ts::Tensor t({static_cast<int64_t>(ms.size())}, ts::DType::f64);
  t.data = std::move(ms);
  nlohmann::json attrs = nlohmann::json::object();
  if (!clock.empty()) attrs["clock"] = clock;
  if (!run.empty()) attrs["timing_run"] = run;
  return {"/timings/" + name, std::move(t), attrs};
}

const ts::RuleOutcome& speed_rule(const ts::CandidateVerdict& v) {
  for (const auto& o : v.outcomes)
    if (o.metric == "speedup") return o;
  FAIL("no speed rule");
  return v.outcomes.front();
}

ts::CandidateVerdict gate_one(const std::string& f, const std::string& base, const std::string& cand, int pairs = 3) {
  ts::GateRunOptions o;
  o.pairs = pairs;
  o.warmup = 0;
  const ts::GateRun r = ts::run_gate_on_fixture(ts::load_gate("sparse_acceptance"), f, base, {cand}, o);
  REQUIRE(r.candidates.size() == 1);
  return r.candidates.front();
}

}  // namespace

TEST_CASE("gate driver: a stored candidate without /timings has no speed (a file read is not a kernel)") {
  const std::string f = fixture_with("no_timings", {timing("slow", {9, 10, 11, 10, 9, 10, 11}, ts::kClockDevice)});
  const ts::CandidateVerdict v = gate_one(f, "stored:slow", "stored:fast");
  CHECK(v.verdict == ts::Verdict::inconclusive);
  CHECK(speed_rule(v).status == ts::RuleStatus::missing);
  CHECK(speed_rule(v).message.find("no timings") != std::string::npos);
  CHECK(v.clock.empty());
}

TEST_CASE("gate driver: stored device timings never pair with host timings, nor an unknown clock") {
  const std::string h = fixture_with("clocks_host", {timing("fast", {1, 1.1, 0.9, 1, 1, 1, 1}, ts::kClockDevice),
                                                     timing("slow", {9, 10, 11, 10, 9, 10, 11}, ts::kClockHost)});
  const ts::CandidateVerdict host = gate_one(h, "stored:slow", "stored:fast");
  CHECK(host.verdict == ts::Verdict::inconclusive);
  CHECK(speed_rule(host).message.find("clocks differ") != std::string::npos);
  const std::string f = fixture_with("clocks", {timing("fast", {1, 1.1, 0.9, 1, 1, 1, 1}, ts::kClockDevice),
                                                timing("slow", {9, 10, 11, 10, 9, 10, 11}, "")});
  const ts::CandidateVerdict unknown = gate_one(f, "stored:slow", "stored:fast");
  CHECK(unknown.verdict == ts::Verdict::inconclusive);
  CHECK(speed_rule(unknown).message.find("clock unknown") != std::string::npos);
}

TEST_CASE("gate driver: two stored sides on one clock with enough samples are judged, and say their clock") {
  const std::string f = fixture_with("same_clock", {timing("fast", {1, 1.1, 0.9, 1, 1, 1.05, 0.95}, ts::kClockDevice),
                                                    timing("slow", {9, 10, 11, 10, 9.5, 10.5, 10}, ts::kClockDevice)});
  const ts::CandidateVerdict v = gate_one(f, "stored:slow", "stored:fast");
  CHECK(v.verdict == ts::Verdict::accept);
  CHECK(speed_rule(v).message.find("one timing run") != std::string::npos);
  // The same samples from two separate timing runs: the run-to-run variance is unknown.
  const std::string s2 = fixture_with("two_runs", {timing("fast", {1, 1.1, 0.9, 1, 1, 1.05, 0.95}, ts::kClockDevice, "run-a"),
                                                   timing("slow", {9, 10, 11, 10, 9.5, 10.5, 10}, ts::kClockDevice, "run-b")});
  const ts::CandidateVerdict sep = gate_one(s2, "stored:slow", "stored:fast");
  CHECK(sep.verdict == ts::Verdict::inconclusive);
  CHECK(speed_rule(sep).message.find("different timing runs") != std::string::npos);
  CHECK(speed_rule(v).status == ts::RuleStatus::pass);
  CHECK(v.clock == ts::kClockDevice);
  CHECK(v.to_json()["clock"] == ts::kClockDevice);
  // Two samples a side are too few.
  const std::string g = fixture_with("few", {timing("fast", {1, 1}, ts::kClockDevice), timing("slow", {9, 10}, ts::kClockDevice)});
  const ts::CandidateVerdict few = gate_one(g, "stored:slow", "stored:fast");
  CHECK(few.verdict == ts::Verdict::inconclusive);
  CHECK(speed_rule(few).message.find("too few samples") != std::string::npos);
}

TEST_CASE("gate driver: one pair is legal but too few to judge speed; bad options are input errors") {
  const std::string f = fixture_with("pairs", {});
  // Timed here: a gate that opts in to timing emulations (benchmarking touchstone itself).
  ts::GateFile timed = ts::load_gate("sparse_acceptance");
  timed.time_emulations = true;
  ts::GateRunOptions one;
  one.pairs = 1;
  one.warmup = 0;
  const ts::CandidateVerdict v =
      ts::run_gate_on_fixture(timed, f, "sage2:preset=sm121", {"sol:tau=-100"}, one).candidates.at(0);
  CHECK(speed_rule(v).status == ts::RuleStatus::missing);
  CHECK(speed_rule(v).message.find("too few pairs") != std::string::npos);
  // Without the opt-in, an emulation's time is never speed evidence.
  const ts::CandidateVerdict emu = gate_one(f, "sage2:preset=sm121", "sol:tau=-100", 8);
  CHECK(speed_rule(emu).status == ts::RuleStatus::missing);
  CHECK(speed_rule(emu).message.find("is an emulation") != std::string::npos);
  CHECK(v.verdict != ts::Verdict::accept);
  ts::GateRunOptions bad;
  bad.pairs = -3;
  CHECK_THROWS_AS(ts::run_gate_on_fixture(ts::load_gate("sparse_acceptance"), f, "sage2", {"sol"}, bad), ts::InputError);
}

TEST_CASE("gate driver: a device backend without a device is an input error before any work") {
  if (ts::device_present()) return;  // only meaningful without a device
  const std::string f = fixture_with("nodevice", {});
  ts::GateRunOptions o;
  for (const char* spec : {"exact_cuda", "sage2_cuda:preset=sm121"}) {
    CHECK_THROWS_AS(ts::run_gate_on_fixture(ts::load_gate("sage_compat"), f, "sage2", {spec}, o), ts::InputError);
    CHECK_THROWS_AS(ts::run_gate_on_fixture(ts::load_gate("sage_compat"), f, spec, {"sage2"}, o), ts::InputError);
  }
}

TEST_CASE("gate driver: a real kernel's stored timings against the default emulation baseline: accuracy decides") {
  // A good float16-like kernel, stored with host-clock timings, was once REJECTed on
  // not_slower against the sage2 CPU emulation. The emulation's time is not a kernel's.
  const std::string f = fixture_with("vs_emulation", {timing("fast", {30, 31, 29, 30, 30, 31, 29}, ts::kClockHost)});
  ts::GateRunOptions o;
  const ts::GateRun r = ts::run_gate_on_fixture(ts::load_gate("sage_compat"), f, "sage2:preset=sm121", {"stored:fast"}, o);
  const ts::CandidateVerdict& v = r.candidates.at(0);
  CHECK(v.verdict == ts::Verdict::accept);  // the stored output is sage2's own: every accuracy rule passes
  CHECK(speed_rule(v).status == ts::RuleStatus::missing);
  CHECK(speed_rule(v).message.find("'sage2:preset=sm121' is an emulation") != std::string::npos);
  CHECK(speed_rule(v).message.find("replay") != std::string::npos);
}

TEST_CASE("gate driver: --accuracy-only leaves the speed rules out and says so") {
  const std::string f = fixture_with("accuracy_only", {});
  ts::GateRunOptions o;
  o.accuracy_only = true;
  const ts::GateRun r = ts::run_gate_on_fixture(ts::load_gate("sparse_acceptance"), f, "sage2:preset=sm121", {"stored:fast"}, o);
  const ts::CandidateVerdict& v = r.candidates.at(0);
  CHECK(v.verdict == ts::Verdict::accept);
  for (const auto& oc : v.outcomes) CHECK(oc.metric != "speedup");
  CHECK(r.context.at("accuracy_only").get<std::string>().find("speed rules skipped") != std::string::npos);
  bool noted = false;
  for (const auto& n : v.notes) noted = noted || n.find("accuracy only") != std::string::npos;
  CHECK(noted);
  CHECK(r.exit_code() == 0);
}

TEST_CASE("gate driver: a baseline with NaN makes the verdict MISTRUSTED, not the candidate's fault") {
  const std::string f = fixture_with("nan_base", {});
  const ts::Fixture fx = ts::load_fixture(f);
  ts::Tensor bad = ts::make_attention_backend("sage2:preset=sm121", {f})->run(ts::attention_problem(fx)).out;
  bad.data[5] = std::nan("");
  ts::append_datasets(f, {{"/outputs/nanbase/attention", bad, ts::output_attrs("nanbase", {}, std::nullopt)}});
  ts::GateRunOptions o;
  const ts::GateRun r = ts::run_gate_on_fixture(ts::load_gate("sage_compat"), f, "stored:nanbase", {"stored:fast"}, o);
  CHECK(r.candidates.at(0).verdict == ts::Verdict::mistrusted);
  CHECK(std::string(ts::verdict_name(r.candidates.at(0).verdict)) == "MISTRUSTED");
  CHECK(r.exit_code() == 1);
}
