// What a review as a new user found (2026-12-03), end to end: outputs never
// overwrite inputs or devices, JSON inputs are regular files, stored times are
// positive, a reference with NaN makes the evidence MISTRUSTED, batch checks
// its plan before work, --record creates no store for a refused run, and scan
// claims no trend it did not measure.
#include <sys/stat.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "catch.hpp"
#include "cli_runner.hpp"
#include "fixtures/fixture.hpp"

namespace fs = std::filesystem;

namespace {

using Result = ts::test::CliResult;
Result cli(const std::string& args) { return ts::test::run_cli(args); }
std::string dir() {
  const std::string d = ts::test::scratch_dir() + "/review";
  fs::create_directories(d);
  return d;
}
std::string tiny(const std::string& name) {
  const std::string p = dir() + "/" + name + ".h5";
  if (!fs::exists(p)) REQUIRE(cli("fixture synth --preset tiny --seed 4 -o " + p).code == 0);
  return p;
}
size_t lines(const std::string& s) { return static_cast<size_t>(std::count(s.begin(), s.end(), '\n')); }
void bad_input(const Result& r, const std::string& want) {
  INFO(r.out << r.err);
  CHECK(r.code == 2);
  CHECK(lines(r.err) == 1);
  CHECK(r.err.find(want) != std::string::npos);
}

}  // namespace

TEST_CASE("review: an output path that is an input, or an HDF5 file, is refused before any work") {
  const std::string f = tiny("overlap");
  const std::string before = ts::test::read_file(f);
  bad_input(cli("gate --gate sage_compat --fixture " + f + " --candidate exact --json " + f),
            "is also an input (--fixture");
  const std::string g = dir() + "/mine.gate.json";
  std::ofstream(g) << ts::test::read_file(std::string(TOUCHSTONE_SOURCE_DIR) + "/gates/sage_compat.json");
  const std::string gate_before = ts::test::read_file(g);
  bad_input(cli("gate --gate " + g + " --fixture " + f + " --candidate exact --html " + g), "is also an input (--gate");
  const std::string other = tiny("other");
  bad_input(cli("gate --gate sage_compat --fixture " + f + " --candidate exact --markdown " + other),
            "is an HDF5 file (a fixture?), not a report");
  bad_input(cli("fixture extract " + f + " --heads 0 --tokens 0:8 -o " + f + " --force"), "is also an input");
  const std::string j = dir() + "/twice.json";
  bad_input(cli("gate --gate sage_compat --fixture " + f + " --candidate exact --json " + j + " --html " + j),
            "one file cannot hold both outputs");
  CHECK(ts::test::read_file(f) == before);
  CHECK(ts::test::read_file(g) == gate_before);
  CHECK(cli("fixture validate " + other).code == 0);
}

TEST_CASE("review: a JSON input that is a device, a FIFO or a folder is refused, not read forever") {
  const std::string f = tiny("json_inputs");
  bad_input(cli("gate --gate /dev/zero --fixture " + f + " --candidate exact"), "is not a regular file");
  const std::string fifo = dir() + "/fifo.json";
  fs::remove(fifo);
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  bad_input(cli("gate --gate " + fifo + " --fixture " + f + " --candidate exact"), "is not a regular file");
  const std::string folder = dir() + "/folder.json";
  fs::create_directories(folder);
  bad_input(cli("gate --gate " + folder + " --fixture " + f + " --candidate exact"), "is a folder");
  bad_input(cli("import-report /dev/zero -o " + dir() + "/m.json"), "is not a regular file");
}

TEST_CASE("review: a report to a device is written in place; a failed write is an error, not exit 0") {
  const std::string f = tiny("devices");
  const Result null = cli("gate --gate sage_compat --fixture " + f + " --candidate exact --accuracy-only --json /dev/null");
  CHECK(null.code == 0);
  struct stat st {};
  REQUIRE(::stat("/dev/null", &st) == 0);
  CHECK(S_ISCHR(st.st_mode));  // not replaced by a regular file
  if (fs::exists("/dev/full")) {
    bad_input(cli("gate --gate sage_compat --fixture " + f + " --candidate exact --accuracy-only --json /dev/full"),
              "/dev/full: cannot write");
    REQUIRE(::stat("/dev/full", &st) == 0);
    CHECK(S_ISCHR(st.st_mode));
    const std::string cmd = "TOUCHSTONE_NO_PROGRESS=1 \"" + std::string(TOUCHSTONE_CLI) + "\" gate --gate sage_compat "
                            "--fixture " + f + " --candidate exact --accuracy-only > /dev/full 2>/dev/null";
    const int st2 = std::system(cmd.c_str());
    CHECK((WIFEXITED(st2) && WEXITSTATUS(st2) == 2));
  }
}

TEST_CASE("review: stored times of 0 ms are refused naming the dataset, before any work") {
  const std::string f = tiny("zero_times");
  REQUIRE(cli("reference " + f + " --backend sage2 --preset sm90").code == 0);
  ts::Tensor t({4}, ts::DType::f64);
  t.data = {0.5, 0.0, 0.5, 0.5};
  ts::append_datasets(f, {{"/timings/sage2_sm90", t, {{"clock", "host_steady"}, {"timing_run", "r"}}}});
  bad_input(cli("gate --gate sparse_acceptance --fixture " + f + " --baseline exact --candidate stored:sage2_sm90"),
            "/timings/sage2_sm90: sample 1 is 0, not a positive finite time in ms");
}

TEST_CASE("review: an exact reference holding NaN makes the evidence MISTRUSTED, not the candidate REJECTed") {
  const std::string f = tiny("nan_exact");
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

TEST_CASE("review: batch checks every group of its plan before any worker starts") {
  const std::string f = tiny("batch_check");
  const std::string p = dir() + "/bad-plan.json";
  std::ofstream(p) << R"({"schema": "touchstone.plan/1", "fixtures": [")" + f +
                          R"("], "gates": ["sage_compat"], "candidates": ["sage2"], "options": {"exact": "nope"}})";
  const std::string report = dir() + "/bad-plan-report.json";
  bad_input(cli("batch " + p + " --json " + report), "unknown backend 'nope'");
  CHECK_FALSE(fs::exists(report));
  CHECK_FALSE(fs::exists(dir() + "/bad-plan.results"));
}

TEST_CASE("review: --record creates no results store for a run refused as bad input") {
  const std::string f = tiny("record_refused");
  const std::string db = dir() + "/refused.db";
  bad_input(cli("gate --gate sage_compat --fixture " + f + " --candidate exactt --record " + db), "unknown backend");
  CHECK_FALSE(fs::exists(db));
}

TEST_CASE("review: scan where every run fails reports no trend and nothing measured") {
  const Result r = cli("scan --candidate plugin:" + std::string(TOUCHSTONE_PLUGIN_DIR) +
                       "/libtsk_bad_nan.so --from 256 --to 2048 --points 4 --json");
  INFO(r.out << r.err);
  CHECK(r.code == 1);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["slope"].is_null());
  const Result t = cli("scan --candidate plugin:" + std::string(TOUCHSTONE_PLUGIN_DIR) +
                       "/libtsk_bad_nan.so --from 256 --to 2048 --points 4");
  CHECK(t.out.find("nothing measured") != std::string::npos);
  CHECK(t.out.find("no cliff: every step follows the trend") == std::string::npos);
  for (size_t a = 0, b; (b = t.out.find('\n', a)) != std::string::npos; a = b + 1) CHECK(b - a <= 100);
}

TEST_CASE("review: a malformed tile token order is refused on load, naming the file") {
  for (const char* order : {"tile:abc", "tile:0x1x1", "tile:1x2x2junk"}) {
    const std::string f = dir() + "/order.h5";
    REQUIRE(cli("fixture synth --force --preset tiny --seed 4 -o " + f).code == 0);
    ts::edit_attrs(f, "/config", {{"token_order", order}});
    const Result r = cli("fixture validate " + f);
    bad_input(r, std::string("token_order '") + order + "' is not tile:TTxTHxTW");
    CHECK(r.err.find(f) != std::string::npos);
  }
}

TEST_CASE("review: TOUCHSTONE_PLUGIN_PROBE_TIMEOUT_S fails a hanging plugin fast, the others still judged") {
  const std::string f = tiny("hang");
  ::setenv("TOUCHSTONE_PLUGIN_PROBE_TIMEOUT_S", "2", 1);
  const auto t0 = std::chrono::steady_clock::now();
  const Result r = cli("gate --gate sage_compat --accuracy-only --fixture " + f + " --candidate plugin:" +
                       std::string(TOUCHSTONE_PLUGIN_DIR) + "/libtsk_bad_hang.so --candidate exact");
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ::setenv("TOUCHSTONE_PLUGIN_PROBE_TIMEOUT_S", "soon", 1);
  const Result bad = cli("gate --gate sage_compat --fixture " + f + " --candidate exact");
  ::unsetenv("TOUCHSTONE_PLUGIN_PROBE_TIMEOUT_S");
  INFO(r.out << r.err);
  CHECK(r.code == 1);
  CHECK(r.out.find("timed out: the plugin probe ran longer than 2 s") != std::string::npos);
  CHECK(r.out.find("ACCEPT exact") != std::string::npos);
  CHECK(s < 60);
  // Only read when a plugin is probed; a bad value then is bad input.
  CHECK(bad.code == 0);
}

TEST_CASE("review: triage's text fits 100 columns off a terminal, its commands still one shell line each") {
  const std::string f = tiny("triage_width");
  const Result r = cli("triage " + f + " --candidate sol:tau=1.3");
  INFO(r.out << r.err);
  REQUIRE(r.code == 0);
  for (size_t a = 0, b; (b = r.out.find('\n', a)) != std::string::npos; a = b + 1) CHECK(b - a <= 100);
  // A wrapped command ends its broken lines with a backslash.
  const size_t slice = r.out.find("slice: ");
  REQUIRE(slice != std::string::npos);
  const std::string rest = r.out.substr(slice, r.out.find('\n', slice) - slice);
  if (rest.size() >= 99) CHECK(rest.back() == '\\');
}
