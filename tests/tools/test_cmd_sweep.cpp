// End to end: `touchstone sweep` and `touchstone bench emulation` on a tiny
// synthetic fixture, as a user runs them.
#include <cstdio>
#include <filesystem>
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
