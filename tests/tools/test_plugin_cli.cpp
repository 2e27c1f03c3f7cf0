// End-to-end: plugin candidates through `touchstone gate`, as a kernel team
// runs them. The example host plugin is judged next to every broken plugin,
// and each broken one gets its own reason while the others keep their verdicts.
#include <chrono>
#include <cstdlib>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "catch.hpp"
#include "cli_runner.hpp"

namespace {

using ts::test::CliResult;
const std::string kDir = TOUCHSTONE_PLUGIN_DIR;
std::string lib(const std::string& name) { return "plugin:" + kDir + "/lib" + name + ".so"; }

// Accuracy against exact, and a speed rule every timed candidate meets, so
// the test sees the timing ran without depending on which side is faster.
// The baseline is an emulation: its time is opted in (time_emulations), this
// test benchmarks touchstone's plugin path, not a kernel.
const char* kGate = R"({"schema": "touchstone.gate/1", "name": "plugin-test", "baseline": "exact",
  "tensor": "attention", "time_emulations": true, "rules": [
    {"id": "close", "metric": "rel_l2", "against": "exact", "max": 1e-5},
    {"id": "timed", "metric": "speedup", "against": "baseline", "min": 1e-6}]})";

std::string setup() {
  const std::string f = ts::test::scratch_dir() + "/plugin_tiny.h5";
  const std::string g = ts::test::scratch_dir() + "/plugin_gate.json";
  if (!std::filesystem::exists(f)) {
    REQUIRE(ts::test::run_cli("fixture synth --preset tiny --seed 2 -o " + f).code == 0);
    std::ofstream(g) << kGate;
  }
  return "gate --gate " + g + " --fixture " + f + " --pairs 8 ";
}

}  // namespace

TEST_CASE("plugin CLI: a crashing or broken plugin leaves the other verdicts intact") {
  const std::string j = ts::test::scratch_dir() + "/plugin_report.json";
  const std::string good = lib("tsk_host_attention");
  const CliResult r = ts::test::run_cli(
      setup() + "--json " + j + " --candidate " + lib("tsk_bad_crash") + " --candidate " + good +
      " --candidate " + lib("tsk_bad_abort") + " --candidate " + lib("tsk_bad_nan") + " --candidate " +
      lib("tsk_bad_missing_symbol") + " --candidate " + lib("tsk_bad_wrong_version") +
      " --candidate plugin:" + std::string(TOUCHSTONE_SOURCE_DIR) + "/README.md --candidate " + good +
      ",accumulate=fp64");
  INFO(r.out << r.err);
  CHECK(r.code == 1);
  const auto rep = nlohmann::json::parse(ts::test::read_file(j));
  std::map<std::string, nlohmann::json> by;
  for (const auto& c : rep["candidates"]) by[c["candidate"]] = c;
  REQUIRE(by.size() == 8);
  for (const std::string& g : {good, good + ",accumulate=fp64"}) {
    CHECK(by[g]["verdict"] == "ACCEPT");
    CHECK(by[g]["details"]["stats"]["clock"] == "host_steady");
    CHECK(by[g]["details"]["speed"]["level"].get<std::string>().find("steady clock") != std::string::npos);
  }
  auto reason = [&](const std::string& c) {
    CHECK(by[c]["verdict"] == "REJECT");
    return by[c]["error"].get<std::string>();
  };
  CHECK_THAT(reason(lib("tsk_bad_crash")), Catch::Contains("crashed: signal 11 (Segmentation fault)"));
  CHECK_THAT(reason(lib("tsk_bad_abort")), Catch::Contains("crashed: signal 6"));
  CHECK_THAT(reason(lib("tsk_bad_nan")), Catch::Contains("non-finite value(s)"));
  CHECK_THAT(reason(lib("tsk_bad_missing_symbol")), Catch::Contains("has no symbol tsk_run"));
  CHECK_THAT(reason(lib("tsk_bad_wrong_version")), Catch::Contains("ABI version 999"));
  CHECK_THAT(reason("plugin:" + std::string(TOUCHSTONE_SOURCE_DIR) + "/README.md"), Catch::Contains("cannot load plugin"));
  CHECK(r.out.find("crashed: signal 11") != std::string::npos);
}

TEST_CASE("plugin CLI: a plugin as the baseline, and bad specs") {
  const CliResult b = ts::test::run_cli(setup() + "--baseline " + lib("tsk_host_attention") + ",accumulate=fp64" +
                                        " --candidate exact");
  INFO(b.out << b.err);
  CHECK(b.code == 0);
  CHECK(b.out.find("summary: 1 accepted, 0 rejected") != std::string::npos);
  // A baseline that crashes leaves nothing to judge against: bad input.
  const CliResult c = ts::test::run_cli(setup() + "--baseline " + lib("tsk_bad_crash") + " --candidate exact");
  CHECK(c.code == 2);
  CHECK(c.err.find("crashed: signal 11") != std::string::npos);
  for (const std::string spec : {"plugin:", "plugin:x.so,key"}) {
    const CliResult e = ts::test::run_cli(setup() + "--candidate " + spec);
    CHECK(e.code == 2);
    CHECK(e.err.find("plugin") != std::string::npos);
  }
  // The probe subcommand stays out of the help.
  CHECK(ts::test::run_cli("--help").out.find("__plugin-probe") == std::string::npos);
}

TEST_CASE("plugin CLI: TOUCHSTONE_PLUGIN_PROBE_TIMEOUT_S fails a hanging plugin fast, the others still judged") {
  const std::string f = ts::test::scratch_dir() + "/plugin_hang.h5";
  REQUIRE(ts::test::run_cli("fixture synth --preset tiny --seed 4 -o " + f).code == 0);
  ::setenv("TOUCHSTONE_PLUGIN_PROBE_TIMEOUT_S", "2", 1);
  const auto t0 = std::chrono::steady_clock::now();
  const CliResult r = ts::test::run_cli("gate --gate sage_compat --accuracy-only --fixture " + f + " --candidate plugin:" +
                       std::string(TOUCHSTONE_PLUGIN_DIR) + "/libtsk_bad_hang.so --candidate exact");
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ::setenv("TOUCHSTONE_PLUGIN_PROBE_TIMEOUT_S", "soon", 1);
  const CliResult bad = ts::test::run_cli("gate --gate sage_compat --fixture " + f + " --candidate exact");
  ::unsetenv("TOUCHSTONE_PLUGIN_PROBE_TIMEOUT_S");
  INFO(r.out << r.err);
  CHECK(r.code == 1);
  CHECK(r.out.find("timed out: the plugin probe ran longer than 2 s") != std::string::npos);
  CHECK(r.out.find("ACCEPT exact") != std::string::npos);
  CHECK(s < 60);
  // Only read when a plugin is probed; a bad value then is bad input.
  CHECK(bad.code == 0);
}
