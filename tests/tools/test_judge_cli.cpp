// End-to-end, as issue 9 "What was seen" found them on a ci fixture: timing
// provenance, one judge for the stage comparison, and usage or environment
// errors that exit 2 before any work.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>

#include "catch.hpp"
#include "cli_runner.hpp"
#include "fixtures/attention_inputs.hpp"
#include "fixtures/fixture.hpp"
#include "drivers/run_estimate.hpp"
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

const nlohmann::json& stage_row(const nlohmann::json& j, const std::string& stage) {
  for (const auto& row : j["stages"])
    if (row["stage"] == stage) return row;
  FAIL("no row for stage " << stage);
  return j;
}

}  // namespace

TEST_CASE("seen: a stored candidate without /timings is not ACCEPTed on a timed HDF5 read", "[judge][cli]") {
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

TEST_CASE("seen: stored device timings are not compared with a host emulation's", "[judge][cli]") {
  const std::string f = synth("device_vs_host", "ci", true);
  store_timings(f, "observed", {0.5, 0.52, 0.49, 0.5, 0.51}, "device_events");
  const Result r = cli("gate --gate sparse_acceptance --fixture " + f + " --candidate stored:observed");
  INFO(r.out << r.err);
  CHECK(r.code == 1);
  CHECK(r.out.find("INCONCLUSIVE") != std::string::npos);
  // The emulation baseline's time is never set against a kernel's (issue 22).
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

TEST_CASE("seen: --pairs 1 is legal but cannot ACCEPT on one sample", "[judge][cli]") {
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

TEST_CASE("seen: usage and environment errors exit 2 before any work, not as verdicts", "[judge][cli]") {
  const std::string f = synth("usage", "tiny", false);
  const Result neg = cli("gate --gate sparse_acceptance --fixture " + f + " --candidate sol --pairs -3");
  CHECK(neg.code == 2);
  CHECK(neg.out.empty());
  // A device backend where there is no device (or no CUDA in the build).
  if (!ts::device_present()) {
    for (const char* spec : {"exact_cuda", "sage2_cuda:preset=sm121"}) {
      const Result c = cli("gate --gate sage_compat --fixture " + f + " --candidate " + spec);
      INFO(c.err);
      CHECK(c.code == 2);
      CHECK(c.out.empty());
      CHECK(cli("gate --gate sage_compat --fixture " + f + " --baseline " + spec + " --candidate sage2").code == 2);
    }
  }
  // A report path that cannot be written is found before the fixture is even opened.
  for (const char* flag : {"--json", "--junit", "--markdown", "--html"}) {
    const Result r = cli("gate --fixture " + scratch() + "/no_such_fixture.h5 --candidate sol " + flag +
                         " " + scratch() + "/nodir/r.out");
    INFO(flag << ": " << r.err);
    CHECK(r.code == 2);
    CHECK(r.err.find("nodir") != std::string::npos);
    CHECK(r.err.find("no_such_fixture") == std::string::npos);
  }
  const Result cmp = cli("compare " + scratch() + "/no_such_fixture.h5 a b --json " + scratch() + "/nodir/c.json");
  CHECK(cmp.code == 2);
  CHECK(cmp.err.find("nodir") != std::string::npos);
}

TEST_CASE("seen: compare --stages is judged by the gate engine", "[judge][cli]") {
  const std::string f = synth("stages", "ci", true);
  REQUIRE(cli("reference " + f + " --block --linear bf16 --attention exact").code == 0);
  REQUIRE(cli("reference " + f + " --block --linear fp64 --attention exact").code == 0);
  // bf16 rounding of the same block against float64: no stage is bad.
  const Result b = cli("compare " + f + " block_bf16_exact block_fp64_exact --stages --json");
  INFO(b.err);
  CHECK(b.code == 0);
  const auto bj = nlohmann::json::parse(b.out);
  CHECK(bj["first_failing_stage"].is_null());
  CHECK(stage_row(bj, "norm1")["status"] == "pass");

  // An unsatisfiable max_ratio_to_baseline fails (exit 1), with or without an exact stage set.
  const std::string g = scratch() + "/tight.json";
  std::ofstream(g) << R"({"schema": "touchstone.gate/1", "name": "tight", "tensor": "stages", "rules": [
      {"id": "tight", "metric": "rel_l2", "against": "exact", "max_ratio_to_baseline": 1e-6}]})";
  const Result t = cli("compare " + f + " block_bf16_exact observed --stages --gate " + g + " --exact block_fp64_exact");
  INFO(t.out << t.err);
  CHECK(t.code == 1);
  CHECK(t.out.find("within its bounds") == std::string::npos);
  CHECK(cli("compare " + f + " block_bf16_exact observed --stages --gate " + g).code == 1);

  // A stage no rule names is not judged: "–", never "pass".
  const std::string one = scratch() + "/one_stage.json";
  std::ofstream(one) << R"({"schema": "touchstone.gate/1", "name": "one", "rules": [
      {"id": "fc2_close", "metric": "rel_l2", "max": 1, "tensor": "fc2"}]})";
  const Result o = cli("compare " + f + " block_bf16_exact block_fp64_exact --stages --gate " + one + " --json");
  CHECK(o.code == 0);
  const auto oj = nlohmann::json::parse(o.out);
  CHECK(stage_row(oj, "norm1")["status"] == "–");
  CHECK(stage_row(oj, "fc2")["status"] == "pass");
  const Result text = cli("compare " + f + " block_bf16_exact block_fp64_exact --stages --gate " + one);
  CHECK(text.out.find("norm1") != std::string::npos);
  CHECK(text.out.find("–") != std::string::npos);
}

TEST_CASE("seen: compare F X exact accepts a stored exact_cuda, and no silent hours", "[judge][cli]") {
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

TEST_CASE("cli conventions: --help everywhere names no source file and gives an example", "[judge][cli]") {
  std::vector<std::string> todo = {""}, seen;
  while (!todo.empty()) {
    const std::string cmd = todo.back();
    todo.pop_back();
    const Result r = cli(cmd + " --help");
    INFO("touchstone " << cmd << " --help");
    CHECK(r.code == 0);
    CHECK(r.out.find(".cpp") == std::string::npos);
    CHECK(r.out.find(".hpp") == std::string::npos);
    // Off a terminal (COLUMNS unset in CI), help fits 100 columns: descriptions wrapped.
    {
      std::istringstream lines(r.out);
      for (std::string l; std::getline(lines, l);) {
        INFO(l);
        CHECK(l.size() <= 100);
      }
    }
    // Subcommands are listed after "Subcommands:", one per line.
    const auto at = r.out.find("Subcommands:");
    if (at != std::string::npos) {
      std::istringstream in(r.out.substr(at));
      std::string line;
      std::getline(in, line);
      while (std::getline(in, line) && !line.empty()) {
        if (line.find_first_not_of(' ') > 2) continue;  // a wrapped description's continuation
        std::istringstream w(line);
        std::string name;
        w >> name;
        if (!name.empty()) todo.push_back(cmd.empty() ? name : cmd + " " + name);
      }
    } else {
      seen.push_back(cmd);
      CHECK(r.out.find("Example:") != std::string::npos);
    }
  }
  CHECK(seen.size() >= 10);
}

TEST_CASE("cli conventions: --json means stdout alone or with -, a file with a path", "[judge][cli]") {
  const std::string f = synth("json_forms", "tiny", true);
  const Result a = cli("compare " + f + " observed observed --json");
  const Result b = cli("compare " + f + " observed observed --json -");
  CHECK(a.code == 0);
  CHECK(a.out == b.out);
  CHECK(nlohmann::json::parse(a.out)["metrics"].is_object());
  const std::string p = scratch() + "/cmp.json";
  const Result c = cli("compare " + f + " observed observed --json " + p);
  CHECK(c.code == 0);
  CHECK(nlohmann::json::parse(ts::test::read_file(p)) == nlohmann::json::parse(a.out));
  CHECK(c.out.find("rel_l2") != std::string::npos);  // the text still goes to stdout
  const Result s = cli("fixture validate " + f + " --json");
  CHECK(s.code == 0);
  CHECK(nlohmann::json::parse(s.out).is_object());
}
