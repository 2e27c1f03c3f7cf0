// No silent hours: the exact reference as a spec, either stored exact output
// accepted, and a CPU run estimated over the limit refused with its estimate.
#include <cstdlib>

#include "catch.hpp"
#include "core/error.hpp"
#include "driver_fixtures.hpp"
#include "drivers/gate_on_fixture.hpp"
#include "drivers/run_estimate.hpp"
#include "fixtures/attention_inputs.hpp"
#include "kernels_under_test/registry.hpp"

namespace {

void store_exact_as(const std::string& f, const std::string& name) {
  const ts::Fixture fx = ts::load_fixture(f);
  auto exact = ts::make_attention_backend("exact", {f});
  ts::append_datasets(f, {{"/outputs/" + name + "/attention", exact->run(ts::attention_problem(fx)).out,
                             ts::output_attrs(name, exact->params(), std::nullopt)}});
}

}  // namespace

TEST_CASE("run estimate: the estimate grows with S^2 and the refusal names it") {
  ts::BlockConfig c;
  c.heads = 56;
  c.head_dim = 128;
  c.segments = {{"video", true, 0, 37810}};
  const double big = ts::estimate_cpu_attention_s(c);
  c.segments[0].length = 37810 / 2;
  CHECK(ts::estimate_cpu_attention_s(c) == Approx(big / 4).epsilon(1e-3));
  c.segments[0].length = 37810;
  ts::SlowGuard g;  // 10 minutes
  // block24 on a CPU: far over 10 minutes on any machine this runs on (~320 s on 16 threads: 4.1e13 FLOP).
  CHECK(ts::attention_flops(c) == Approx(4.0 * 37810.0 * 37810 * 56 * 128));
  std::string msg;
  try {
    ts::refuse_slow_cpu({{"exact", 1}, {"sage2", 11}}, c, g, "gate");
  } catch (const ts::InputError& e) {
    msg = e.what();
  }
  CHECK(msg.find("refusing a CPU run estimated at about") != std::string::npos);
  CHECK(msg.find("--allow-slow") != std::string::npos);
  g.allow_slow = true;
  CHECK_NOTHROW(ts::refuse_slow_cpu({{"exact", 1}, {"sage2", 11}}, c, g, "gate"));
  g.allow_slow = false;
  // Stored outputs and routed backends are not dense CPU work.
  CHECK_NOTHROW(ts::refuse_slow_cpu({{"stored:exact", 1}, {"sol:tau=1.3", 1}}, c, g, "gate"));
}

TEST_CASE("run estimate: either stored exact output serves, else the CPU or the device mirror") {
  const std::string f = ts::test::synth_fixture("exact_choice", "tiny", false);
  const ts::BlockConfig c = ts::load_fixture(f).config;
  CHECK(ts::choose_exact("auto", f, c).spec == "exact");  // tiny: the CPU, device or not
  store_exact_as(f, "exact_cuda");
  CHECK(ts::choose_exact("auto", f, c).spec == "stored:exact_cuda");
  CHECK(ts::choose_exact("exact", f, c).spec == "stored:exact_cuda");
  store_exact_as(f, "exact");
  CHECK(ts::choose_exact("exact", f, c).spec == "stored:exact");
  CHECK(ts::choose_exact("exact_cuda", f, c).spec == "stored:exact_cuda");
  CHECK(ts::choose_exact("exact:precision=fp32", f, c).spec == "exact:precision=fp32");
}

TEST_CASE("run estimate: a gate with only stored outputs uses a stored exact, and refuses the CPU one over the limit") {
  const std::string f = ts::test::synth_fixture("stored_only", "tiny", false);
  store_exact_as(f, "cand");
  ts::GateRunOptions o;
  ::setenv("TOUCHSTONE_SLOW_LIMIT_S", "0", 1);
  CHECK_THROWS_AS(ts::run_gate_on_fixture(ts::load_gate("sparse_acceptance"), f, "stored:cand", {"stored:cand"}, o),
                  ts::InputError);
  o.allow_slow = true;
  CHECK(ts::run_gate_on_fixture(ts::load_gate("sparse_acceptance"), f, "stored:cand", {"stored:cand"}, o).candidates.size() == 1);
  o.allow_slow = false;
  store_exact_as(f, "exact_cuda");
  const ts::GateRun r = ts::run_gate_on_fixture(ts::load_gate("sparse_acceptance"), f, "stored:cand", {"stored:cand"}, o);
  CHECK(r.context["exact"]["spec"] == "stored:exact_cuda");
  ::unsetenv("TOUCHSTONE_SLOW_LIMIT_S");
}
