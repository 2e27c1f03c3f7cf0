// End-to-end: a chain set synthesized by `fixture synth --blocks --steps`, run by
// `touchstone chain` and searched by `touchstone policy` as a user would:
// exit codes, JSON, the HTML page, and bad input refused before any work.
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "catch.hpp"
#include "cli_runner.hpp"

namespace fs = std::filesystem;

namespace {

using ts::test::CliResult;
CliResult cli(const std::string& args) { return ts::test::run_cli(args); }

const std::string& chain_set() {
  static const std::string dir = [] {
    const std::string d = ts::test::scratch_dir() + "/chain";
    const CliResult r = cli("fixture synth --preset tiny --seed 2 --blocks 3 --steps 2 -o " + d);
    INFO(r.out << r.err);
    REQUIRE(r.code == 0);
    return d;
  }();
  return dir;
}

}  // namespace

TEST_CASE("fixture synth --blocks --steps writes one file per block and step, refuses to overwrite") {
  const std::string d = chain_set();
  for (const char* f : {"block00_step00.h5", "block02_step01.h5"}) CHECK(fs::exists(d + "/" + f));
  CHECK_FALSE(fs::exists(d + "/block03_step00.h5"));
  const CliResult again = cli("fixture synth --preset tiny --seed 2 --blocks 3 --steps 2 -o " + d);
  CHECK(again.code == 2);
  CHECK(again.err.find("--force") != std::string::npos);
  CHECK(cli("fixture synth --preset tiny --blocks 3 -o " + ts::test::scratch_dir() + "/half").code == 2);
  CHECK_FALSE(fs::exists(ts::test::scratch_dir() + "/half"));
  const CliResult v = cli("fixture validate " + d + "/block01_step01.h5");
  CHECK(v.code == 0);
}

TEST_CASE("touchstone chain: the error after each block, the verdict of the gate, JSON and HTML") {
  const std::string d = chain_set(), html = ts::test::scratch_dir() + "/chain.html";
  const CliResult r = cli("chain " + d + " --candidate sol:tau=3 --candidate dense --json - --html " + html);
  INFO(r.err);
  REQUIRE((r.code == 0 || r.code == 1));
  const nlohmann::json j = nlohmann::json::parse(r.out);
  CHECK(j["schema"] == "touchstone.chain/1");
  REQUIRE(j["chains"].size() == 2);
  CHECK(j["chains"][0]["cells"].size() == 6);
  CHECK(j["chains"][1]["verdict"]["verdict"] == "ACCEPT");
  CHECK(j["chains"][0]["time_note"] == "emulation time: not a speed verdict");
  CHECK(j["exit_code"] == r.code);
  const std::string page = ts::test::read_file(html);
  CHECK(page.find("<svg") != std::string::npos);
  CHECK(page.find("error after each block") != std::string::npos);
  const CliResult t = cli("chain " + d + " --candidate 'dense if step<1; sol:tau=1.3'");
  INFO(t.err);
  CHECK((t.code == 0 || t.code == 1));
  CHECK(t.out.find("largest own error: block") != std::string::npos);
  CHECK(t.out.find("emulation time: not a speed verdict") != std::string::npos);
}

TEST_CASE("touchstone policy prints the frontier and the chosen schedule") {
  const CliResult r = cli("policy " + chain_set() + " --tau 1.3,3 --accuracy-only");
  INFO(r.out << r.err);
  CHECK(r.code == 0);
  CHECK(r.out.find("chosen: '") != std::string::npos);
  CHECK(r.out.find("dense-equivalent work") != std::string::npos);
}

TEST_CASE("touchstone chain with plugin kernels on both sides judges the summed attention time") {
  // Kernels, not emulations, on both sides: `faster` is judged with the default gate (no
  // time_emulations), paired by cell; which side is faster on this host is not asserted.
  const std::string plugin = "plugin:" + std::string(TOUCHSTONE_PLUGIN_DIR) + "/libtsk_host_attention.so";
  const CliResult r = cli("chain " + chain_set() + " --baseline " + plugin + " --candidate " + plugin +
                          ",accumulate=fp64 --candidate dense --json -");
  INFO(r.err);
  REQUIRE((r.code == 0 || r.code == 1));
  const nlohmann::json j = nlohmann::json::parse(r.out);
  REQUIRE(j["chains"].size() == 2);
  for (const auto& ch : j["chains"]) {
    INFO(ch["schedule"]);
    CHECK(ch["time_is_real"] == true);
    CHECK(ch["time_note"] == "kernel times, summed over cells");
    CHECK(ch["verdict"]["clock"] == "host_steady");
    bool judged = false;
    for (const auto& rule : ch["verdict"]["rules"])
      if (rule["id"] == "faster") judged = rule["status"] != "missing" && rule["figure"].is_number();
    CHECK(judged);
  }
  CHECK(j["baseline_attention_ms"].get<double>() > 0);
}

TEST_CASE("chain and policy: bad input is exit 2 with one line, before any work") {
  const std::string d = chain_set(), out = ts::test::scratch_dir() + "/never.html";
  for (const std::string& args :
       {"chain " + d + " --candidate 'dense if step<1' --html " + out,   // a step not covered
        "chain " + d + " --candidate 'sol:tau=1.3 if stp<1; sol' --html " + out,
        "chain " + d + " --candidate sol:tau=1.3,nope=1 --html " + out,
        "chain " + d + " --candidate sol:tau=1.3 --gate sage_compat --html " + out,  // judges attention
        "chain " + d + "/block00_step00.h5 " + d + "/block01_step00.h5 " + d + "/block00_step01.h5 --candidate sol",
        "policy " + d + " --tau '' --html " + out}) {
    const CliResult r = cli(args);
    INFO(args << "\n" << r.err);
    CHECK(r.code == 2);
    CHECK(r.out.empty());
    CHECK(r.err.find('\n') == r.err.size() - 1);
  }
  CHECK_FALSE(fs::exists(out));
}
