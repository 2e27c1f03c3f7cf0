// End to end: what a verdict is judged on. Timings carry their provenance (a stored kernel
// without /timings, device against host clocks, one timing run, a single pair); stored times
// must be positive; an exact reference with NaN makes the evidence MISTRUSTED rather than the
// candidate REJECTed; a stored exact_cuda serves as the exact reference, and a CPU run over the
// slow-run limit is refused with its estimate.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "catch.hpp"
#include "cli_runner.hpp"
#include "fixtures/attention_inputs.hpp"
#include "fixtures/fixture.hpp"
#include "kernels_under_test/registry.hpp"

namespace fs = std::filesystem;

namespace {

using Result = ts::test::CliResult;
const std::string& scratch() { return ts::test::scratch_dir(); }
Result cli(const std::string& args) { return ts::test::run_cli(args); }

// A fixture as a user makes one (with /attention/observed).
std::string synth(const std::string& name, const std::string& preset, bool block) {
  const std::string p = scratch() + "/" + name + ".h5";
  const Result r = cli("fixture synth --preset " + preset + " --seed 3 " + (block ? "--with-block " : "") + "-o " + p);
  REQUIRE(r.code == 0);
  return p;
}

void store_timings(const std::string& f, const std::string& name, std::vector<double> ms, const std::string& clock,
                   const std::string& run = "") {
  ts::Tensor t({static_cast<int64_t>(ms.size())}, ts::DType::f64);
  t.data = std::move(ms);
  nlohmann::json attrs = nlohmann::json::object();
  if (!clock.empty()) attrs["clock"] = clock;
  if (!run.empty()) attrs["timing_run"] = run;
  ts::append_datasets(f, {{"/timings/" + name, std::move(t), attrs}});
}

const nlohmann::json& speed_rule(const nlohmann::json& report) {
  for (const auto& r : report["candidates"][0]["rules"])
    if (r["metric"] == "speedup") return r;
  FAIL("no speed rule");
  return report;
}

// Exit 2, one line on stderr holding `want`: bad input, before any work.
void bad_input(const Result& r, const std::string& want) {
  INFO(r.out << r.err);
  CHECK(r.code == 2);
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  CHECK(r.err.find(want) != std::string::npos);
}

}  // namespace

TEST_CASE("evidence: a stored candidate without /timings is not ACCEPTed on a timed HDF5 read", "[evidence][cli]") {
  const std::string f = synth("no_timings", "ci", true);
  // Against a stored kernel with timings (an emulation baseline is not timed at all).
  REQUIRE(cli("reference " + f + " --backend sage2 --preset sm121").code == 0);
  store_timings(f, "sage2_sm121", {5, 5.2, 4.9, 5.1}, "device_events");
  const Result r = cli("gate --gate sparse_acceptance --fixture " + f +
                       " --baseline stored:sage2_sm121 --candidate stored:observed --json");
  INFO(r.err);
  CHECK(r.code == 1);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["candidates"][0]["verdict"] == "INCONCLUSIVE");
  CHECK(speed_rule(j)["status"] == "missing");
  CHECK(speed_rule(j)["message"].get<std::string>().find("no timings") != std::string::npos);
}

TEST_CASE("evidence: stored device timings are not compared with a host emulation's", "[evidence][cli]") {
  const std::string f = synth("device_vs_host", "ci", true);
  store_timings(f, "observed", {0.5, 0.52, 0.49, 0.5, 0.51}, "device_events");
  const Result r = cli("gate --gate sparse_acceptance --fixture " + f + " --candidate stored:observed");
  INFO(r.out << r.err);
  CHECK(r.code == 1);
  CHECK(r.out.find("INCONCLUSIVE") != std::string::npos);
  // The emulation baseline's time is never set against a kernel's.
  CHECK(r.out.find("emulation, whose time") != std::string::npos);
  // A stored kernel on the host clock against device timings: the clocks differ.
  REQUIRE(cli("reference " + f + " --backend sage2 --preset sm121").code == 0);
  store_timings(f, "sage2_sm121", {5, 5.2, 4.9, 5.1}, "host_steady");
  const Result host = cli("gate --gate sparse_acceptance --fixture " + f +
                          " --baseline stored:sage2_sm121 --candidate stored:observed");
  CHECK(host.code == 1);
  CHECK(host.out.find("clocks differ") != std::string::npos);
  // Stored on one clock on both sides, interleaved in one timing run (8 rounds,
  // the sign test's minimum at 98 % is 7): judged, and the reports say which
  // clock decided.
  store_timings(f, "observed", {0.5, 0.52, 0.49, 0.5, 0.51, 0.5, 0.49, 0.5}, "device_events", "run-1");
  store_timings(f, "sage2_sm121", {5, 5.2, 4.9, 5.1, 5, 5.1, 4.9, 5}, "device_events", "run-1");
  const std::string md = scratch() + "/clock.md", x = scratch() + "/clock.xml", h = scratch() + "/clock.html";
  const Result ok = cli("gate --gate sparse_acceptance --fixture " + f + " --baseline stored:sage2_sm121 --candidate "
                        "stored:observed --markdown " + md + " --junit " + x + " --html " + h);
  INFO(ok.out << ok.err);
  CHECK(ok.code == 0);
  CHECK(ok.out.find("device_events") != std::string::npos);
  for (const auto& p : {md, x, h}) CHECK(ts::test::read_file(p).find("device_events") != std::string::npos);
  const Result js = cli("gate --gate sparse_acceptance --fixture " + f + " --baseline stored:sage2_sm121 --candidate "
                        "stored:observed --json -");
  CHECK(nlohmann::json::parse(js.out)["candidates"][0]["clock"] == "device_events");
}

TEST_CASE("evidence: --pairs 1 is legal but cannot ACCEPT on one sample", "[evidence][cli]") {
  const std::string f = synth("one_pair", "ci", false);
  // The emulations' times opted in, so that the statistics are what decides.
  const std::string g = scratch() + "/timed_emulations.json";
  std::ofstream(g) << R"({"schema": "touchstone.gate/1", "name": "timed", "baseline": "sage2", "time_emulations": true,
    "rules": [{"id": "faster", "metric": "speedup", "against": "baseline", "min": 1.0, "confidence": 0.98}]})";
  const Result r = cli("gate --gate " + g + " --fixture " + f + " --candidate sol:tau=-100 --pairs 1 --json -");
  INFO(r.err);
  CHECK(r.code == 1);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["candidates"][0]["verdict"] != "ACCEPT");
  CHECK(speed_rule(j)["message"].get<std::string>().find("too few pairs (1") != std::string::npos);
}

TEST_CASE("evidence: compare F X exact accepts a stored exact_cuda, and no silent hours", "[evidence][cli]") {
  const std::string f = synth("exact_cuda_only", "tiny", true);
  {
    const ts::Fixture fx = ts::load_fixture(f);
    auto exact = ts::make_attention_backend("exact", {f});
    ts::append_datasets(f, {{"/outputs/exact_cuda/attention", exact->run(ts::attention_problem(fx)).out,
                             ts::output_attrs("exact_cuda", exact->params(), std::nullopt)}});
  }
  const Result c = cli("compare " + f + " observed exact --json");
  INFO(c.err);
  CHECK(c.code == 0);
  CHECK(nlohmann::json::parse(c.out)["b"]["dataset"] == "/outputs/exact_cuda/attention");

  // A CPU run over the limit (set to 0 s here) refuses with its estimate, exit 2, unless asked.
  const std::string g = synth("slow", "tiny", true);
  ::setenv("TOUCHSTONE_SLOW_LIMIT_S", "0", 1);
  const Result slow = cli("gate --gate sage_compat --fixture " + g + " --candidate stored:observed --baseline stored:observed");
  CHECK(slow.code == 2);
  CHECK(slow.err.find("estimated at about") != std::string::npos);
  CHECK(slow.out.empty());
  const Result sw = cli("sweep " + g + " --tau 1.3");
  CHECK(sw.code == 2);
  CHECK(sw.err.find("estimated at about") != std::string::npos);
  CHECK(cli("gate --gate sage_compat --fixture " + g + " --candidate stored:observed --baseline stored:observed --allow-slow").code != 2);
  // With a stored exact_cuda, only stored outputs run: nothing to refuse.
  const Result stored = cli("gate --gate sage_compat --fixture " + f + " --candidate stored:observed --baseline stored:observed --json -");
  ::unsetenv("TOUCHSTONE_SLOW_LIMIT_S");
  INFO(stored.err);
  CHECK(stored.code != 2);
  CHECK(nlohmann::json::parse(stored.out)["context"]["exact"]["spec"] == "stored:exact_cuda");
}

TEST_CASE("evidence: stored times of 0 ms are refused naming the dataset, before any work", "[evidence][cli]") {
  const std::string f = synth("zero_times", "tiny", false);
  REQUIRE(cli("reference " + f + " --backend sage2 --preset sm90").code == 0);
  ts::Tensor t({4}, ts::DType::f64);
  t.data = {0.5, 0.0, 0.5, 0.5};
  ts::append_datasets(f, {{"/timings/sage2_sm90", t, {{"clock", "host_steady"}, {"timing_run", "r"}}}});
  bad_input(cli("gate --gate sparse_acceptance --fixture " + f + " --baseline exact --candidate stored:sage2_sm90"),
            "/timings/sage2_sm90: sample 1 is 0, not a positive finite time in ms");
}

TEST_CASE("evidence: an exact reference holding NaN makes the evidence MISTRUSTED, not the candidate REJECTed", "[evidence][cli]") {
  const std::string f = synth("nan_exact", "tiny", false);
  REQUIRE(cli("reference " + f + " --backend exact").code == 0);
  ts::Tensor ex = ts::read_tensor(f, "/outputs/exact/attention");
  ex.data[17] = std::nan("");
  ts::append_datasets(f, {{"/outputs/onenan/attention", ex, ts::output_attrs("exact", {}, std::nullopt)}});
  const Result r = cli("gate --gate sage_compat --fixture " + f + " --exact stored:onenan --candidate sage2 --json");
  INFO(r.out << r.err);
  CHECK(r.code == 1);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["candidates"][0]["verdict"] == "MISTRUSTED");
  CHECK(j.dump().find("the exact reference 'stored:onenan' has 1 non-finite values") != std::string::npos);
}
