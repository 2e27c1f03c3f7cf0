// End to end: `touchstone sweep` and `touchstone bench emulation` on a tiny
// synthetic fixture, as a user runs them.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

#include "catch.hpp"

namespace {

struct Run {
  int rc;
  std::string out;
};

// Runs the CLI with `args`, stdout captured, stderr discarded.
Run cli(const std::string& args) {
  const std::string cmd = std::string("\"") + TOUCHSTONE_CLI + "\" " + args + " 2>/dev/null";
  FILE* f = popen(cmd.c_str(), "r");
  REQUIRE(f != nullptr);
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, n);
  const int status = pclose(f);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

std::string tiny_fixture() {
  static const std::string path = [] {
    const auto p = std::filesystem::temp_directory_path() /
                   ("touchstone_sweep_" + std::to_string(getpid()) + ".h5");
    const Run r = cli("fixture synth --force --preset tiny --seed 3 -o \"" + p.string() + "\"");
    REQUIRE(r.rc == 0);
    return p.string();
  }();
  return path;
}

}  // namespace

TEST_CASE("touchstone sweep: one row per tau, density falls, dense limit matches") {
  const Run r = cli("sweep \"" + tiny_fixture() + "\" --tau -100,0,1.3,3 --param block_k=8 --json");
  REQUIRE(r.rc == 0);
  const auto j = nlohmann::json::parse(r.out);
  REQUIRE(j.at("rows").size() == 4);
  double prev = 2;
  for (const auto& row : j.at("rows")) {
    const double d = row.at("density").get<double>();
    CHECK(d <= prev);
    prev = d;
    CHECK(row.at("ms").get<double>() >= 0);
    CHECK(row.at("nonfinite").get<int64_t>() == 0);
  }
  const auto& dense = j.at("rows")[0];
  CHECK(dense.at("tau").get<double>() == -100);
  CHECK(dense.at("density").get<double>() == 1.0);
  CHECK(dense.at("rel_l2_vs_exact").get<double>() < 4e-3);
  CHECK(dense.at("name") == "sol_tau-100_bf16_bk8");
  CHECK(j.at("baseline").at("name") == "sage2_sm121");
  const double base = j.at("baseline").at("rel_l2_vs_exact").get<double>();
  CHECK(base > 1e-3);
  CHECK(base < 5e-2);
  // The exact reference is a backend spec like any other (exact_cuda on a GPU machine).
  const Run f = cli("sweep \"" + tiny_fixture() + "\" --tau 1.3 --param block_k=8 --exact exact:precision=fp32 --json");
  REQUIRE(f.rc == 0);
  const auto jf = nlohmann::json::parse(f.out);
  CHECK(jf.at("exact").at("name") == "exact_fp32");
  CHECK(std::abs(jf.at("baseline").at("rel_l2_vs_exact").get<double>() - base) < 1e-5);
  // Text output: a header and one line per tau.
  const Run t = cli("sweep \"" + tiny_fixture() + "\" --tau 0,1 --precision int8_qk");
  REQUIRE(t.rc == 0);
  CHECK(t.out.find("rel_l2/base") != std::string::npos);
}

TEST_CASE("touchstone sweep: bad input exits 2") {
  CHECK(cli("sweep \"" + tiny_fixture() + "\" --tau 1 --precision fp8").rc == 2);
  CHECK(cli("sweep \"" + tiny_fixture() + "\" --tau x").rc == 2);
  CHECK(cli("sweep \"" + tiny_fixture() + "\" --tau 1 --param nope=1").rc == 2);
  CHECK(cli("sweep \"" + tiny_fixture() + "\" --tau 1 --param tau=2").rc == 2);
  // Both references are checked before any work starts.
  CHECK(cli("sweep \"" + tiny_fixture() + "\" --tau 1 --exact nope").rc == 2);
  CHECK(cli("sweep \"" + tiny_fixture() + "\" --tau 1 --baseline sage2:preset=sm1").rc == 2);
  CHECK(cli("sweep /nonexistent/touchstone.h5 --tau 1").rc == 2);
  CHECK(cli("sweep --help").rc == 0);
}

TEST_CASE("touchstone sweep --gate: the seed's table as terminal, JSON, Markdown and HTML, one exit code") {
  namespace fs = std::filesystem;
  const std::string dir = fs::path(tiny_fixture()).parent_path().string();
  const std::string md = dir + "/sweep_" + std::to_string(getpid()) + ".md";
  const std::string html = dir + "/sweep_" + std::to_string(getpid()) + ".html";
  const std::string args = "sweep \"" + tiny_fixture() + "\" --tau 0,3 --param block_k=8 --gate sparse_acceptance";
  const Run r = cli(args + " --markdown \"" + md + "\" --html \"" + html + "\" --json");
  // sage-like rows with no timing samples: INCONCLUSIVE, so the gate's exit code 1.
  CHECK(r.rc == 1);
  const auto j = nlohmann::json::parse(r.out);
  REQUIRE(j.at("gate").at("candidates").size() == 2);
  for (const auto& c : j.at("gate").at("candidates")) {
    CHECK(c.at("verdict") != "ACCEPT");
    CHECK(c.at("shown").size() == 5);
  }
  CHECK(j.at("rows")[1].at("verdict") == j.at("gate").at("candidates")[1].at("verdict"));
  CHECK(j.at("block").at("skipped").get<std::string>().find("has no block") != std::string::npos);
  CHECK(j.at("exit_code") == 1);
  // Nothing was timed, and the context says so in both places: no pair beside "not timed".
  CHECK(j.at("gate").at("context").at("speed").get<std::string>().rfind("not timed (--pairs 0)", 0) == 0);
  CHECK(j.at("gate").at("context").at("pairs") == 0);
  std::ifstream mf(md), hf(html);
  const std::string mtext((std::istreambuf_iterator<char>(mf)), {}), htext((std::istreambuf_iterator<char>(hf)), {});
  CHECK(mtext.find("| candidate | tau | density | rel_l2 vs sage2_sm121 | rel_l2 vs exact |") != std::string::npos);
  CHECK(mtext.find("not timed (--pairs 0)") != std::string::npos);
  CHECK(htext.find("<th>rel_l2 vs exact</th>") != std::string::npos);
  CHECK(htext.find("has no block") != std::string::npos);
  CHECK(htext.find("<tr><th>pairs</th><td><code>0</code>") != std::string::npos);
  const Run t = cli(args);
  CHECK(t.rc == 1);
  CHECK(t.out.find("summary: 0 accepted") != std::string::npos);
  // Reports need verdicts; a bad --block or report path is bad input, and nothing is written.
  fs::remove(md);
  CHECK(cli("sweep \"" + tiny_fixture() + "\" --tau 3 --markdown \"" + md + "\"").rc == 2);
  CHECK_FALSE(fs::exists(md));
  CHECK(cli(args + " --block on").rc == 2);
  CHECK(cli(args + " --html /nonexistent/dir/t.html").rc == 2);
  CHECK(cli(args + " --pairs -1").rc == 2);
  fs::remove(html);
}

TEST_CASE("touchstone sweep: tau as the user wrote it in text, JSON and page (-100, not -1e+02)") {
  namespace fs = std::filesystem;
  const std::string html = fs::path(tiny_fixture()).parent_path().string() + "/sweep_tau_" + std::to_string(getpid()) + ".html";
  const std::string args = "sweep \"" + tiny_fixture() + "\" --tau -100,1.2345678 --param block_k=8 --gate sparse_acceptance";
  const Run j = cli(args + " --html \"" + html + "\" --json");
  const auto rep = nlohmann::json::parse(j.out);
  REQUIRE(rep.at("gate").at("candidates").size() == 2);
  CHECK(rep.at("gate").at("candidates")[0].at("candidate") == "sol:tau=-100,block_k=8");
  CHECK(rep.at("gate").at("candidates")[0].at("shown")[0] == "-100");
  CHECK(rep.at("gate").at("candidates")[1].at("candidate") == "sol:tau=1.2345678,block_k=8");
  CHECK(rep.at("gate").at("candidates")[1].at("shown")[0] == "1.2345678");
  CHECK(rep.at("rows")[0].at("tau") == -100);
  std::ifstream hf(html);
  const std::string page((std::istreambuf_iterator<char>(hf)), {});
  CHECK(page.find("sol:tau=-100,block_k=8") != std::string::npos);
  CHECK(page.find("sol:tau=1.2345678,block_k=8") != std::string::npos);
  CHECK(page.find("e+02") == std::string::npos);
  const Run t = cli(args);
  CHECK(t.out.find("sol:tau=-100,block_k=8") != std::string::npos);
  CHECK(t.out.find("e+02") == std::string::npos);
  CHECK(t.out.find("1.23457 ") == std::string::npos);
  const Run plain = cli("sweep \"" + tiny_fixture() + "\" --tau -100,1.2345678 --param block_k=8");
  CHECK(plain.out.find("\n     -100 ") != std::string::npos);
  CHECK(plain.out.find("\n1.2345678 ") != std::string::npos);
  fs::remove(html);
}

TEST_CASE("touchstone gate --pairs 0: the run's context holds no pair, --pairs N holds N") {
  const std::string args = "gate --gate sparse_acceptance --fixture \"" + tiny_fixture() + "\" --candidate sol:tau=0";
  const Run none = cli(args + " --pairs 0 --json");
  CHECK(nlohmann::json::parse(none.out).at("context").at("pairs") == 0);
  const Run three = cli(args + " --pairs 3 --json");
  CHECK(nlohmann::json::parse(three.out).at("context").at("pairs") == 3);
}

TEST_CASE("touchstone bench emulation: times every backend against exact") {
  const Run r = cli("bench emulation --preset tiny --reps 1 --json");
  REQUIRE(r.rc == 0);
  const auto j = nlohmann::json::parse(r.out);
  // exact, sage2 at each preset of a distinct configuration (sm121, sm89,
  // sm90; sm120 is sm121's), five sol points.
  REQUIRE(j.at("rows").size() == 9);
  CHECK(j.at("rows")[0].at("name") == "exact");
  CHECK(j.at("rows")[0].at("ratio_to_exact").get<double>() == 1.0);
  for (const auto& row : j.at("rows")) CHECK(row.at("ms_median").get<double>() > 0);
  CHECK(cli("bench emulation --preset nope").rc == 2);
  CHECK(cli("bench emulation --reps 0").rc == 2);
  std::filesystem::remove(tiny_fixture());
}
