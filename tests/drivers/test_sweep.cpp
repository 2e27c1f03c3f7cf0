// The sweep as a library (drivers/sweep.hpp): the seed's table on tiny fixtures. Every row
// is judged by the gate engine on the figures the table shows; stored kernels are rows and
// are judged on their own /timings; the sweep's single runs are never speed evidence; the
// block's per-stage chain is there when the fixture has a block and says why when not.
#include <fstream>

#include "catch.hpp"
#include "core/error.hpp"
#include "driver_fixtures.hpp"
#include "drivers/sweep.hpp"
#include "fixtures/attention_inputs.hpp"
#include "gates/metrics.hpp"
#include "kernels_under_test/registry.hpp"
#include "report/sweep_report.hpp"
#include "report/terminal.hpp"

namespace {

ts::SweepOptions tiny_options(const std::string& gate) {
  ts::SweepOptions o;
  o.taus = {-100, 3};
  o.params = {"block_k=8"};
  o.baseline = "sage2:preset=sm121";
  o.gate = gate;
  o.block = "off";
  return o;
}

// A gate whose only rule puts its bound between the dense row (0.020 from sage2 on this
// fixture) and the routed one (0.36), so one row passes and one fails.
std::string tight_gate() {
  const std::string p = ts::test::driver_scratch() + "/tight_gate.json";
  std::ofstream(p) << R"({"schema": "touchstone.gate/1", "name": "tight", "baseline": "sage2", "tensor": "attention",
    "rules": [{"id": "sage_like", "metric": "rel_l2", "against": "baseline", "max": 0.1}]})";
  return p;
}

ts::DatasetWrite timing(const std::string& name, std::vector<double> ms) {
  ts::Tensor t({static_cast<int64_t>(ms.size())}, ts::DType::f64);
  t.data = std::move(ms);
  // Both kernels timed interleaved in one run (python3 -m touchstone replay --kernel A --kernel B).
  return {"/timings/" + name, std::move(t), {{"clock", "device_events"}, {"timing_run", "one-run"}}};
}

const ts::RuleOutcome* rule(const ts::CandidateVerdict& v, const std::string& id) {
  for (const auto& o : v.outcomes)
    if (o.id == id) return &o;
  return nullptr;
}

}  // namespace

TEST_CASE("sweep driver: each row judged by the gate engine on the figures the table shows") {
  const std::string f = ts::test::synth_fixture("sweep_rows", "tiny", false);
  const ts::SweepResult r = ts::run_sweep(f, tiny_options(tight_gate()));
  REQUIRE(r.run);
  REQUIRE(r.run->candidates.size() == 2);
  const auto& dense = r.run->candidates[0];
  const auto& routed = r.run->candidates[1];
  CHECK(dense.verdict == ts::Verdict::accept);
  CHECK(routed.verdict == ts::Verdict::reject);
  CHECK(r.exit_code() == 1);
  // The row's distance is the one an independent run of the same backends gives.
  const ts::Fixture fx = ts::load_fixture(f);
  const ts::AttentionProblem p = ts::attention_problem(fx);
  const ts::Tensor sol = ts::make_attention_backend("sol:tau=3,block_k=8", {f})->run(p).out;
  const ts::Tensor sage = ts::make_attention_backend("sage2:preset=sm121", {f})->run(p).out;
  const double want = *ts::compute_metrics(sol, sage).rel_l2;
  const auto& row = r.json.at("rows")[1];
  CHECK(row.at("rel_l2_vs_baseline").get<double>() == Approx(want).epsilon(1e-12));
  REQUIRE(rule(routed, "sage_like"));
  CHECK(*rule(routed, "sage_like")->figure == Approx(want).epsilon(1e-12));
  CHECK(row.at("verdict") == "REJECT");
  REQUIRE(row.at("deciding").size() == 1);
  CHECK(row.at("deciding")[0].get<std::string>().rfind("sage_like: ", 0) == 0);
  // The columns every report shows, in the run's order.
  REQUIRE(r.run->columns.size() == 5);
  CHECK(routed.shown[0] == "3");
  CHECK(dense.shown[1] == "1.0000");
  CHECK(std::stod(routed.shown[2]) == Approx(want).epsilon(1e-3));
  CHECK(std::stod(routed.shown[3]) == Approx(row.at("rel_l2_vs_exact").get<double>()).epsilon(1e-3));
  // Without a gate: the same figures and no verdicts.
  ts::SweepOptions plain = tiny_options("");
  const ts::SweepResult u = ts::run_sweep(f, plain);
  CHECK_FALSE(u.run);
  CHECK(u.exit_code() == 0);
  CHECK(u.json.at("rows")[1].at("rel_l2_vs_baseline").get<double>() == Approx(want).epsilon(1e-12));
  CHECK_FALSE(u.json.at("rows")[1].contains("verdict"));
  CHECK_THROWS_AS(ts::sweep_markdown(u), ts::InputError);
}

TEST_CASE("sweep driver: stored kernels are rows, judged on their own /timings, never on the sweep's runs") {
  const std::string f = ts::test::synth_fixture("sweep_stored", "tiny", false);
  {
    const ts::Fixture fx = ts::load_fixture(f);
    const ts::Tensor out = ts::make_attention_backend("sage2:preset=sm121", {f})->run(ts::attention_problem(fx)).out;
    ts::append_datasets(f, {{"/outputs/fast/attention", out, ts::output_attrs("fast", {}, std::nullopt)},
                            {"/outputs/slow/attention", out, ts::output_attrs("slow", {}, std::nullopt)},
                            {"/outputs/untimed/attention", out, ts::output_attrs("untimed", {}, std::nullopt)},
                            timing("fast", {1.0, 1.1, 0.9, 1.0, 1.05, 0.95, 1.0}),
                            timing("slow", {3.0, 3.1, 2.9, 3.0, 3.05, 2.95, 3.0})});
  }
  ts::SweepOptions o = tiny_options("sparse_acceptance");
  o.taus = {3};
  o.baseline = "stored:slow";
  const ts::SweepResult r = ts::run_sweep(f, o);
  // auto: the outputs stored with timings, the baseline's own left out.
  REQUIRE(r.json.at("stored").size() == 1);
  CHECK(r.json.at("stored")[0].at("name") == "fast");
  REQUIRE(r.run->candidates.size() == 2);
  const auto& routed = r.run->candidates[0];
  const auto& fast = r.run->candidates[1];
  CHECK(fast.candidate == "stored:fast");
  CHECK(fast.verdict == ts::Verdict::accept);
  CHECK(fast.clock == "device_events");
  REQUIRE(rule(fast, "faster"));
  CHECK(rule(fast, "faster")->status == ts::RuleStatus::pass);
  CHECK(fast.shown[0] == "stored");
  CHECK(fast.shown[1] == "-");
  // An emulated row against the stored baseline: an emulation's time is not a kernel's.
  REQUIRE(rule(routed, "faster"));
  CHECK(rule(routed, "faster")->status == ts::RuleStatus::missing);
  CHECK(rule(routed, "faster")->message.find("is an emulation") != std::string::npos);
  CHECK(routed.verdict != ts::Verdict::accept);

  // Named: an output without timings is a row too, and its speed is missing for that reason.
  o.stored = "untimed";
  const ts::SweepResult n = ts::run_sweep(f, o);
  REQUIRE(n.run->candidates.size() == 2);
  CHECK(n.run->candidates[1].candidate == "stored:untimed");
  CHECK(n.run->candidates[1].verdict == ts::Verdict::inconclusive);
  CHECK(rule(n.run->candidates[1], "faster")->message.find("no timings") != std::string::npos);
  o.stored = "none";
  CHECK(ts::run_sweep(f, o).run->candidates.size() == 1);
  o.stored = "absent";
  CHECK_THROWS_AS(ts::run_sweep(f, o), ts::InputError);
}

TEST_CASE("sweep driver: --pairs times computed rows in pairs, as the gate does") {
  const std::string f = ts::test::synth_fixture("sweep_pairs", "tiny", false);
  // Emulations are timed only when the gate opts in (benchmarking touchstone itself).
  const std::string g = ts::test::driver_scratch() + "/time_emulations.json";
  std::ofstream(g) << R"({"schema": "touchstone.gate/1", "name": "timed", "time_emulations": true, "rules": [
    {"id": "sage_like", "metric": "rel_l2", "max": 0.05},
    {"id": "faster", "metric": "speedup", "min": 1.0, "confidence": 0.98}]})";
  ts::SweepOptions o = tiny_options(g);
  o.taus = {3};
  o.pairs = 8;
  o.warmup = 0;
  const ts::SweepResult r = ts::run_sweep(f, o);
  const auto& c = r.run->candidates.at(0);
  REQUIRE(rule(c, "faster"));
  CHECK(rule(c, "faster")->status != ts::RuleStatus::missing);
  CHECK(rule(c, "faster")->figure.has_value());
  CHECK(c.clock == "host_steady");
}

TEST_CASE("sweep driver: the block's per-stage chain, or one line saying why there is none") {
  const std::string f = ts::test::synth_fixture("sweep_block", "tiny", true);
  ts::SweepOptions o = tiny_options("sparse_acceptance");
  o.taus = {3};
  o.block = "auto";
  const ts::SweepResult r = ts::run_sweep(f, o);
  REQUIRE(r.block);
  CHECK(r.block->a == "block_nvfp4-te_sage2_sm121");
  CHECK(r.block->b == "block_fp64_exact");
  CHECK(r.block->run.candidates.size() == 14);
  // NVFP4's first linear is where the production-like block leaves the exact one (docs/block.md).
  CHECK(r.block->first_failing == "qkv");
  CHECK(r.exit_code() == 1);
  const std::string md = ts::sweep_markdown(r), html = ts::sweep_html(r), text = ts::sweep_text(r);
  CHECK(md.find("### Block: per-stage chain") != std::string::npos);
  CHECK(md.find("| `qkv` |") != std::string::npos);
  CHECK(md.find("| `sol:tau=3,block_k=8` | 3 |") != std::string::npos);
  CHECK(html.find("id=\"run0-candidate-0\"") != std::string::npos);
  CHECK(html.find("id=\"run1-candidate-13\"") != std::string::npos);
  CHECK(text.find("first stage over its bound: qkv") != std::string::npos);
  // A second run takes the stage sets the first stored.
  const ts::SweepResult again = ts::run_sweep(f, o);
  CHECK(ts::sweep_json(again).at("block").at("candidate").at("reused") == true);
  CHECK(again.block->first_failing == "qkv");

  const std::string nb = ts::test::synth_fixture("sweep_noblock", "tiny", false);
  const ts::SweepResult s = ts::run_sweep(nb, o);
  CHECK_FALSE(s.block);
  CHECK(s.block_note.find("skipped") != std::string::npos);
  CHECK(ts::sweep_markdown(s).find(s.block_note) != std::string::npos);
  // The terminal text wraps it to the terminal's width.
  CHECK(ts::sweep_text(s).find(ts::wrap_for_terminal(s.block_note, ts::terminal_width())) != std::string::npos);
  CHECK(ts::sweep_json(s).at("block").at("skipped") == s.block_note);
}

TEST_CASE("sweep driver: bad options are bad input before any run") {
  const std::string f = ts::test::synth_fixture("sweep_bad", "tiny", false);
  ts::SweepOptions o = tiny_options("sparse_acceptance");
  o.block = "on";
  CHECK_THROWS_AS(ts::run_sweep(f, o), ts::InputError);
  o = tiny_options("stages-default");  // judges stages, not attention
  CHECK_THROWS_AS(ts::run_sweep(f, o), ts::InputError);
  o = tiny_options("sparse_acceptance");
  o.taus.clear();
  CHECK_THROWS_AS(ts::run_sweep(f, o), ts::InputError);
  o = tiny_options("no_such_gate");
  CHECK_THROWS_AS(ts::run_sweep(f, o), ts::InputError);
}

TEST_CASE("sweep driver: a NaN figure reads NaN in the table and the JSON, never undef, and fails") {
  const std::string f = ts::test::synth_fixture("sweep_nan", "tiny", false);
  {
    const ts::Fixture fx = ts::load_fixture(f);
    ts::Tensor out = ts::make_attention_backend("sage2:preset=sm121", {f})->run(ts::attention_problem(fx)).out;
    out.data[3] = std::nan("");
    ts::append_datasets(f, {{"/outputs/broken/attention", out, ts::output_attrs("broken", {}, std::nullopt)},
                            timing("broken", {1.0, 1.1, 0.9, 1.0, 1.05, 0.95, 1.0})});
  }
  ts::SweepOptions o = tiny_options("sparse_acceptance");
  o.taus = {3};
  o.stored = "broken";
  const ts::SweepResult r = ts::run_sweep(f, o);
  REQUIRE(r.json.at("stored").size() == 1);
  const auto& row = r.json.at("stored")[0];
  CHECK(row.at("rel_l2_vs_baseline") == "NaN");
  CHECK(row.at("rel_l2_vs_exact") == "NaN");
  REQUIRE(r.run->candidates.size() == 2);
  CHECK(r.run->candidates[1].verdict == ts::Verdict::reject);
  const std::string text = ts::sweep_text(r);
  INFO(text);
  const auto at = text.find("REJECT stored:broken");
  REQUIRE(at != std::string::npos);
  const auto fig = text.find("rel_l2 vs exact", at);
  REQUIRE(fig != std::string::npos);
  const std::string line = text.substr(fig, text.find('\n', fig) - fig);
  CHECK(line.find("NaN") != std::string::npos);
  CHECK(text.find("undef") == std::string::npos);
  for (const auto& s : r.run->candidates[1].shown) CHECK(s != "undef");
}
