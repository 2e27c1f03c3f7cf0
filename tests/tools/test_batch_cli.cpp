// End-to-end: touchstone batch on a plan of 8 tiny fixtures x 3 candidates,
// run as one process, as local workers, as two shards merged in either
// order and under mpirun -np 2, must give one report (apart from its
// "execution" member, docs/batch.md "Determinism"); a worker or a rank that
// dies keeps the others' verdicts and names the cases it did not judge.
// The gate is bit_exact (no speed rule), so no verdict depends on a clock.
#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "catch.hpp"
#include "cli_runner.hpp"
#include "fixtures/fixture.hpp"
#include "text_lines.hpp"

namespace fs = std::filesystem;

namespace {

using ts::test::read_file;
using Result = ts::test::CliResult;
Result cli(const std::string& args) { return ts::test::run_cli(args); }

// A plan folder with 8 tiny fixtures (made once per test process).
const std::string& plan_dir() {
  static const std::string dir = [] {
    const std::string d = ts::test::scratch_dir() + "/batch";
    fs::create_directories(d);
    for (int i = 0; i < 8; ++i) {
      const Result r = cli("fixture synth --preset tiny --seed " + std::to_string(i) + " -o " + d + "/fx" +
                           std::to_string(i) + ".h5 --force");
      REQUIRE(r.code == 0);
    }
    return d;
  }();
  return dir;
}

std::string write_plan(const std::string& name, const std::string& body) {
  const std::string p = plan_dir() + "/" + name;
  std::ofstream(p) << body;
  return p;
}

const std::string kPlanBody = R"({"schema": "touchstone.plan/1", "fixtures": ["fx*.h5"], "gates": ["bit_exact"],
  "candidates": ["sage2", "sol:tau=1.3", "sage2:preset=sm90"]})";

nlohmann::json normalised(const std::string& path) {
  nlohmann::json j = nlohmann::json::parse(read_file(path));
  j.erase("execution");
  return j;
}

// The four reports of one run, written as OUT.{json,md,xml,html}.
std::string reports(const std::string& out) {
  return " --json " + out + ".json --markdown " + out + ".md --junit " + out + ".xml --html " + out + ".html";
}

void same_reports(const std::string& a, const std::string& b) {
  CHECK(normalised(a + ".json") == normalised(b + ".json"));
  for (const char* ext : {".md", ".xml", ".html"}) {
    INFO(a << ext << " vs " << b << ext);
    CHECK(read_file(a + ext) == read_file(b + ext));
  }
}

bool have_mpi() {
  if (std::system("command -v mpirun >/dev/null 2>&1") != 0) return false;
  const Result r = cli("batch " + write_plan("probe.json", kPlanBody) + " --dry-run --json");
  return r.code == 0 && nlohmann::json::parse(r.out).value("mpi_built", false);
}

// mpirun refuses root without these (CI runs as root).
const std::string kMpirun =
    "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1 mpirun --oversubscribe";

Result shell(const std::string& cmd) {
  const std::string o = ts::test::scratch_dir() + "/sh.out", e = ts::test::scratch_dir() + "/sh.err";
  const int st = std::system(("TOUCHSTONE_NO_PROGRESS=1 " + cmd + " >" + o + " 2>" + e).c_str());
  Result r;
  r.code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  r.out = read_file(o);
  r.err = read_file(e);
  return r;
}

}  // namespace

TEST_CASE("touchstone batch: bad plans exit 2 with one line naming the JSON path, before any work") {
  const std::string d = plan_dir();
  struct Bad {
    std::string body, needle;
  };
  const Bad bad[] = {
      {R"({"schema": "touchstone.plan/2", "fixtures": ["fx0.h5"], "gates": ["bit_exact"], "candidates": ["sage2"]})",
       "$.schema"},
      {R"({"schema": "touchstone.plan/1", "fixtures": ["nothing*.h5"], "gates": ["bit_exact"], "candidates": ["sage2"]})",
       "$.fixtures[0]"},
      {R"({"schema": "touchstone.plan/1", "fixtures": ["fx0.h5"], "gates": ["bit_exact"], "candidates": ["sage2", "sol:nope=1"]})",
       "$.candidates[1]"},
      {R"({"schema": "touchstone.plan/1", "fixtures": ["fx0.h5"], "gates": ["no_such_gate"], "candidates": ["sage2"]})",
       "$.gates[0]"},
      {R"({"schema": "touchstone.plan/1", "fixtures": ["fx0.h5"], "gates": ["bit_exact"], "candidates": ["sage2"], "extra": 1})",
       "extra"},
      {R"({"schema": "touchstone.plan/1", "fixtures": ["fx0.h5"], "gates": ["bit_exact"], "candidates": ["sage2"],
           "options": {"pairs": -1}})",
       "$.options.pairs"},
      {R"({"schema": "touchstone.plan/1", "fixtures": ["fx0.h5"], "gates": ["bit_exact"], "candidates": ["stored:absent"]})",
       "$.candidates[0]"},
      {R"({"schema": "touchstone.plan/1", "fixtures": ["fx0.h5"], "gates": ["bit_exact"]})", "no candidate"},
      {R"({"schema": "touchstone.plan/1", "fixtures": ["fx0.h5"], "gates": ["bit_exact"], "sweeps": [{"taus": []}]})",
       "$.sweeps[0].taus"},
      {"{not json", "bad.json"},
      {R"({"schema": "touchstone.plan/1", "fixtures": ["fx0.h5"], "gates": ["bit_exact"],
           "sweeps": [{"backend": "sol", "taus": [1], "params": ["bogus=2"]}]})",
       "$.sweeps[0]"},
      {R"({"schema": "touchstone.plan/1", "fixtures": ["fx0.h5"], "gates": ["bit_exact"], "stored": ["nope"]})",
       "$.stored"},
      {R"({"schema": "touchstone.plan/1", "fixtures": ["fx0.h5", "not_a_fixture.txt"], "gates": ["bit_exact"],
           "candidates": ["sage2"]})",
       "$.fixtures[1]"},
  };
  std::ofstream(d + "/not_a_fixture.txt") << "not HDF5\n";
  for (const auto& b : bad) {
    const std::string p = write_plan("bad.json", b.body);
    fs::remove_all(d + "/bad.results");
    const Result r = cli("batch " + p);
    INFO(b.body << "\n" << r.err);
    CHECK(r.code == 2);
    CHECK(r.err.find(b.needle) != std::string::npos);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    CHECK(!fs::exists(d + "/bad.results"));
  }
  CHECK(cli("batch " + write_plan("ok.json", kPlanBody) + " --shard 2/2").code == 2);
  CHECK(cli("batch merge " + d + "/nothing.json -o " + d + "/x.json").code == 2);
}

TEST_CASE("touchstone batch --dry-run: every case with its estimate and shard; nothing runs") {
  const std::string p = write_plan("dry.json", kPlanBody);
  const Result r = cli("batch " + p + " --dry-run --shard 0/3 --json");
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(r.out);
  REQUIRE(j["cases"].size() == 24);
  CHECK(j["cases"][0]["id"] == "c0000");
  CHECK(j["cases"][23]["candidate"] == "sage2:preset=sm90");
  std::set<int> shards;
  for (const auto& c : j["cases"]) {
    CHECK(c["cost_core_s"].get<double>() > 0);
    shards.insert(c["shard"].get<int>());
  }
  CHECK(shards.size() == 3);
  CHECK(!fs::exists(plan_dir() + "/dry.results"));
}

TEST_CASE("touchstone batch: a sweep's tau becomes the candidate as written, every digit kept") {
  const std::string p = write_plan("taus.json", R"({"schema": "touchstone.plan/1", "fixtures": ["fx0.h5"],
    "gates": ["bit_exact"], "sweeps": [{"taus": [-100, 1.2345678, 1e-7]}]})");
  const Result r = cli("batch " + p + " --dry-run --json");
  INFO(r.err);
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(r.out);
  REQUIRE(j["cases"].size() == 3);
  // Six digits ("%g") ran tau 1.23457 for the plan's 1.2345678.
  CHECK(j["cases"][0]["candidate"] == "sol:tau=-100");
  CHECK(j["cases"][1]["candidate"] == "sol:tau=1.2345678");
  CHECK(j["cases"][2]["candidate"] == "sol:tau=1e-07");
}

TEST_CASE("touchstone batch: one process, 2 workers, shards merged in either order and mpirun -np 2 give one report") {
  const std::string d = plan_dir();
  const std::string p = write_plan("plan.json", kPlanBody);
  const Result one = cli("batch " + p + " --workers 1" + reports(d + "/one"));
  INFO(one.err);
  REQUIRE(one.code == 1);  // sol and sm90 are not bit-exact to sage2
  const auto j = normalised(d + "/one.json");
  CHECK(j["summary"]["accept"] == 8);
  CHECK(j["summary"]["reject"] == 16);
  CHECK(j["summary"]["not_judged"] == 0);
  REQUIRE(j["runs"].size() == 8);

  // A run of the report is what `gate` writes for the same cases.
  const Result g = cli("gate --gate bit_exact --fixture " + d + "/fx3.h5 --candidate sage2 --candidate sol:tau=1.3 "
                       "--candidate sage2:preset=sm90 --json " + d + "/g3.json");
  REQUIRE(g.code == 1);
  CHECK(j["runs"][3] == nlohmann::json::parse(read_file(d + "/g3.json")));

  // One fixture's cases split over 3 workers (each loads it and runs exact and the baseline):
  // still the run `gate` makes.
  const std::string split = write_plan("split.json", R"({"schema": "touchstone.plan/1", "fixtures": ["fx3.h5"],
    "gates": ["bit_exact"], "candidates": ["sage2", "sol:tau=1.3", "sage2:preset=sm90"]})");
  REQUIRE(cli("batch " + split + " --workers 3 --json " + d + "/split-report.json").code == 1);
  const auto sj = nlohmann::json::parse(read_file(d + "/split-report.json"));
  CHECK(sj["runs"] == nlohmann::json::array({nlohmann::json::parse(read_file(d + "/g3.json"))}));
  std::set<int64_t> pids;
  for (const auto& [id, e] : sj["execution"]["cases"].items()) pids.insert(e["pid"].get<int64_t>());
  CHECK(pids.size() == 3);

  REQUIRE(cli("batch " + p + " --workers 2" + reports(d + "/two")).code == 1);
  same_reports(d + "/one", d + "/two");

  // Shards in reverse order, each into its own folder (as array tasks on different nodes).
  REQUIRE(cli("batch " + p + " --shard 1/2 --results " + d + "/r1 -o " + d + "/s1.json").code == 1);
  REQUIRE(cli("batch " + p + " --shard 0/2 --results " + d + "/r0 -o " + d + "/s0.json").code == 1);
  REQUIRE(cli("batch merge " + d + "/s1.json " + d + "/s0.json" + reports(d + "/m10")).code == 1);
  REQUIRE(cli("batch merge " + d + "/s0.json " + d + "/s1.json" + reports(d + "/m01")).code == 1);
  same_reports(d + "/one", d + "/m10");
  same_reports(d + "/one", d + "/m01");

  // A shard missing from the merge: its cases are named, the others' verdicts kept.
  const Result half = cli("batch merge " + d + "/s0.json --json " + d + "/half.json");
  CHECK(half.code == 1);
  const auto h = normalised(d + "/half.json");
  const size_t in_s0 = nlohmann::json::parse(read_file(d + "/s0.json"))["assigned"].size();
  CHECK(h["summary"]["judged"] == in_s0);
  CHECK(h["summary"]["not_judged"] == 24 - in_s0);
  CHECK(h["not_judged"][0]["reason"].get<std::string>().find("shard 1/2 is missing") != std::string::npos);
  // A shard of another plan is refused.
  const std::string other = write_plan("other.json", R"({"schema": "touchstone.plan/1", "fixtures": ["fx0.h5"],
    "gates": ["bit_exact"], "candidates": ["sage2"]})");
  REQUIRE(cli("batch " + other + " --shard 0/1 -o " + d + "/other-s0.json").code == 0);
  const Result mixed = cli("batch merge " + d + "/s0.json " + d + "/other-s0.json -o " + d + "/mixed.json");
  CHECK(mixed.code == 2);
  CHECK(mixed.err.find("another plan") != std::string::npos);

  if (!have_mpi()) {
    WARN("SKIPPED: mpirun or a touchstone built with MPI is absent");
    return;
  }
  const Result m = shell(kMpirun + " -np 2 " + TOUCHSTONE_CLI + " batch " + p + " --results " + d + "/rm" +
                         reports(d + "/mpi"));
  INFO(m.err);
  CHECK(m.code == 1);
  same_reports(d + "/one", d + "/mpi");
}

TEST_CASE("touchstone batch: a worker that crashes loses only its case, reported with its signal") {
  const std::string d = plan_dir();
  const std::string p = write_plan("crash.json", kPlanBody);
  const Result r = shell("TOUCHSTONE_BATCH_FAULT=crash:c0004 " + std::string(TOUCHSTONE_CLI) + " batch " + p +
                         " --workers 2 --json " + d + "/crash-report.json");
  INFO(r.err);
  CHECK(r.code == 1);
  const auto j = normalised(d + "/crash-report.json");
  CHECK(j["summary"]["judged"] == 23);
  REQUIRE(j["not_judged"].size() == 1);
  CHECK(j["not_judged"][0]["id"] == "c0004");
  CHECK(j["not_judged"][0]["reason"].get<std::string>().find("signal 11") != std::string::npos);
  // --resume judges what is left, and the report is the one of a clean run.
  const Result resumed = cli("batch " + p + " --resume --json " + d + "/crash-resumed.json");
  INFO(resumed.err);
  REQUIRE(resumed.code == 1);
  // It says what it kept (the report itself goes to the file).
  CHECK(resumed.out.find("touchstone batch: --resume kept 23 of 24 cases (judged already in ") != std::string::npos);
  CHECK(resumed.out.find("); running the other 1\n") != std::string::npos);
  const auto k = normalised(d + "/crash-resumed.json");
  CHECK(k["summary"]["judged"] == 24);
  CHECK(k["runs"] == normalised(d + "/one.json")["runs"]);
}

TEST_CASE("touchstone batch under mpirun: a rank killed mid-run keeps the other's verdicts and names the rest") {
  if (!have_mpi()) {
    WARN("SKIPPED: mpirun or a touchstone built with MPI is absent");
    return;
  }
  const std::string d = plan_dir();
  const std::string p = write_plan("kill.json", kPlanBody);
  // Rank 1 dies on SIGKILL after its first unit; orte_abort_on_non_zero_status 0
  // keeps mpirun from killing rank 0 with it (docs/batch.md "When a rank dies").
  const Result r = shell("TOUCHSTONE_BATCH_FAULT=rank:1:after:1 " + kMpirun +
                         " --mca orte_abort_on_non_zero_status 0 -np 2 " + TOUCHSTONE_CLI + " batch " + p +
                         " --rank-timeout 3 --json " + d + "/kill-report.json");
  INFO(r.err);
  CHECK(r.code != 0);
  REQUIRE(fs::exists(d + "/kill-report.json"));
  const auto j = normalised(d + "/kill-report.json");
  const Result dry_run = cli("batch " + p + " --dry-run --shard 0/2 --json");
  INFO(dry_run.err);
  REQUIRE(dry_run.code == 0);
  const auto dry = nlohmann::json::parse(dry_run.out);
  size_t rank1 = 0;
  for (const auto& c : dry["cases"]) rank1 += c["shard"] == 1;
  // Rank 0's share, and rank 1's first unit (3 cases, on disk before it died).
  CHECK(j["summary"]["judged"] == 24 - rank1 + 3);
  REQUIRE(j["not_judged"].size() == rank1 - 3);
  for (const auto& n : j["not_judged"])
    CHECK(n["reason"].get<std::string>().find("rank 1 of 2 did not report") != std::string::npos);
  // --resume judges the rest; the report is then the clean run's.
  const Result again = shell(kMpirun + " -np 2 " + TOUCHSTONE_CLI + " batch " + p + " --resume --json " + d +
                             "/kill-resumed.json");
  INFO(again.err);
  CHECK(again.code == 1);
  CHECK(normalised(d + "/kill-resumed.json")["runs"] == normalised(d + "/one.json")["runs"]);
}

TEST_CASE("touchstone batch: group rules keep their worst group however the plan ran, as gate --json has it") {
  const std::string d = plan_dir();
  // sage_compat's group rules name a worst head, query block and frame; bit_exact REJECTs.
  const std::string p = write_plan("worst.json", R"({"schema": "touchstone.plan/1", "fixtures": ["fx1.h5", "fx2.h5"],
    "gates": ["sage_compat", "bit_exact"], "candidates": ["sage2:preset=sm90", "sol:tau=1.3"]})");
  const Result one = cli("batch " + p + " --workers 1 --results " + d + "/w1" + reports(d + "/worst-one"));
  INFO(one.err);
  REQUIRE(one.code == 1);
  const auto j = normalised(d + "/worst-one.json");
  const Result g = cli("gate --gate sage_compat --fixture " + d + "/fx1.h5 --candidate sage2:preset=sm90 "
                       "--candidate sol:tau=1.3 --json " + d + "/worst-g1.json");
  REQUIRE((g.code == 0 || g.code == 1));
  const auto gj = nlohmann::json::parse(read_file(d + "/worst-g1.json"));
  REQUIRE(gj["candidates"][0]["rules"][3]["id"] == "head_vs_exact");
  REQUIRE(gj["candidates"][0]["rules"][3].contains("worst"));
  CHECK(j["runs"][0] == gj);

  REQUIRE(cli("batch " + p + " --workers 2 --results " + d + "/w2" + reports(d + "/worst-two")).code == 1);
  same_reports(d + "/worst-one", d + "/worst-two");
  if (!have_mpi()) {
    WARN("SKIPPED: mpirun or a touchstone built with MPI is absent");
    return;
  }
  // Under mpirun rank 0 judges its share in-process, rank 1's arrives as records: one report still.
  const Result m = shell(kMpirun + " -np 2 " + TOUCHSTONE_CLI + " batch " + p + " --results " + d + "/wm" +
                         reports(d + "/worst-mpi"));
  INFO(m.out << m.err);
  CHECK(m.code == 1);
  same_reports(d + "/worst-one", d + "/worst-mpi");
  // A REJECT ends the job through mpirun's "the job has been aborted": the batch's last line says
  // first that this is its verdict's exit code, not a crash.
  const auto out = ts::test::lines_of(m.out);
  REQUIRE(!out.empty());
  CHECK(out.back().find("exit 1 (not every case was ACCEPTed), the report's verdict, not a crash") != std::string::npos);
}

TEST_CASE("touchstone batch: a MISTRUSTED case is kept by its record, the summary, --resume and merge") {
  const std::string d = plan_dir();
  const std::string f = d + "/mistrust.h5";
  REQUIRE(cli("fixture synth --preset tiny --seed 11 -o " + f + " --force").code == 0);
  REQUIRE(cli("reference " + f + " --backend exact").code == 0);
  ts::Tensor base = ts::read_tensor(f, "/outputs/exact/attention");
  base.data[5] = std::nan("");
  ts::append_datasets(f, {{"/outputs/nanbase/attention", base, ts::output_attrs("nanbase", {}, std::nullopt)}});
  // A baseline holding NaN: nothing trustworthy to judge against, whatever the candidate.
  write_plan("mistrust-gate.json", R"({"schema": "touchstone.gate/1", "name": "close", "rules": [
    {"id": "close", "metric": "rel_l2", "against": "baseline", "max": 1}]})");
  const std::string p = write_plan("mistrust.json", R"({"schema": "touchstone.plan/1", "fixtures": ["mistrust.h5"],
    "gates": ["mistrust-gate.json"], "baselines": ["stored:nanbase"], "candidates": ["sage2", "sage2:preset=sm90"]})");
  const Result r = cli("batch " + p + " --workers 1 --json " + d + "/mistrust-one.json");
  INFO(r.out << r.err);
  REQUIRE(r.code == 1);
  const auto j = normalised(d + "/mistrust-one.json");
  CHECK(j["summary"]["mistrusted"] == 2);
  CHECK(j["summary"]["judged"] == 2);
  CHECK(j["summary"]["not_judged"] == 0);
  CHECK(j["runs"][0]["candidates"][0]["verdict"] == "MISTRUSTED");
  CHECK(j["runs"][0]["summary"]["mistrusted"] == 2);
  CHECK(r.out.find("batch mistrust: 2 cases, 0 ACCEPT, 0 REJECT, 0 INCONCLUSIVE, 2 MISTRUSTED, 0 not judged") !=
        std::string::npos);
  CHECK(r.out.find("summary: 0 accepted, 0 rejected, 0 inconclusive, 2 mistrusted; exit code 1") != std::string::npos);

  const Result resumed = cli("batch " + p + " --resume --json " + d + "/mistrust-resumed.json");
  INFO(resumed.err);
  CHECK(resumed.code == 1);
  CHECK(normalised(d + "/mistrust-resumed.json") == j);
  REQUIRE(cli("batch " + p + " --shard 0/1 --results " + d + "/mistrust-r0 -o " + d + "/mistrust-s0.json").code == 1);
  const Result merged = cli("batch merge " + d + "/mistrust-s0.json -o " + d + "/mistrust-merged.json");
  INFO(merged.err);
  CHECK(merged.code == 1);
  CHECK(normalised(d + "/mistrust-merged.json") == j);
}

TEST_CASE("touchstone batch: every group of its plan is checked before any worker starts") {
  const std::string d = ts::test::scratch_dir() + "/batch_check";
  fs::create_directories(d);
  const std::string f = d + "/fx.h5";
  REQUIRE(cli("fixture synth --preset tiny --seed 4 -o " + f).code == 0);
  const std::string p = d + "/bad-plan.json";
  std::ofstream(p) << R"({"schema": "touchstone.plan/1", "fixtures": [")" + f +
                          R"("], "gates": ["sage_compat"], "candidates": ["sage2"], "options": {"exact": "nope"}})";
  const std::string report = d + "/bad-plan-report.json";
  const Result r = cli("batch " + p + " --json " + report);
  INFO(r.out << r.err);
  CHECK(r.code == 2);
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  CHECK(r.err.find("unknown backend 'nope'") != std::string::npos);
  CHECK_FALSE(fs::exists(report));
  CHECK_FALSE(fs::exists(d + "/bad-plan.results"));
}

TEST_CASE("touchstone batch --resume judges again a case whose fixture, its outputs or its gate file changed") {
  const std::string d = plan_dir();
  const std::string f = d + "/resume-fx.h5";
  REQUIRE(cli("fixture synth --preset tiny --seed 21 -o " + f + " --force").code == 0);
  const std::string gate = write_plan("resume-gate.json", read_file(std::string(TOUCHSTONE_SOURCE_DIR) + "/gates/bit_exact.json"));
  const std::string p = write_plan("resume.json", R"({"schema": "touchstone.plan/1", "fixtures": ["resume-fx.h5"],
    "gates": ["resume-gate.json"], "candidates": ["sage2", "sol:tau=1.3"]})");
  const std::string results = " --results " + d + "/resume.results";
  REQUIRE(cli("batch " + p + results).code == 1);  // sol is no bit-exact copy of sage2
  const Result same = cli("batch " + p + results + " --resume");
  INFO(same.out << same.err);
  CHECK(same.code == 1);
  CHECK(same.out.find("--resume kept 2 of 2 cases (judged already in ") != std::string::npos);
  CHECK(same.out.find("); running the other 0\n") != std::string::npos);

  // A gate file loosened since: its verdicts are not the old ones.
  std::string text = read_file(gate);
  const std::string strict = R"("max": 0})";
  REQUIRE(text.find(strict) != std::string::npos);
  text.replace(text.find(strict), strict.size(), R"("max": 1e9})");
  std::ofstream(gate) << text;
  const Result loosened = cli("batch " + p + results + " --resume");
  INFO(loosened.out << loosened.err);
  CHECK(loosened.code == 0);
  CHECK(loosened.out.find("--resume kept 0 of 2 cases") != std::string::npos);
  CHECK(loosened.out.find("running the other 2 (2 of them judged before their fixture, its outputs, their gate "
                          "file or a plugin library changed)\n") != std::string::npos);

  // Other inputs under the same name.
  REQUIRE(cli("fixture synth --preset tiny --seed 22 -o " + f + " --force").code == 0);
  const Result refixtured = cli("batch " + p + results + " --resume");
  INFO(refixtured.out << refixtured.err);
  CHECK(refixtured.out.find("--resume kept 0 of 2 cases") != std::string::npos);
  CHECK(cli("batch " + p + results + " --resume").out.find("--resume kept 2 of 2 cases") != std::string::npos);

  // An output written beside the fixture (a stored candidate or exact reference may read it).
  REQUIRE(cli("reference " + f + " --backend exact").code == 0);
  const Result output = cli("batch " + p + results + " --resume");
  INFO(output.out << output.err);
  CHECK(output.out.find("--resume kept 0 of 2 cases") != std::string::npos);
}

TEST_CASE("touchstone batch --resume judges again a plugin candidate whose library was rebuilt") {
  const std::string d = plan_dir();
  const std::string f = d + "/resume-plugin-fx.h5";
  REQUIRE(cli("fixture synth --preset tiny --seed 23 -o " + f + " --force").code == 0);
  const std::string so = d + "/libkernel.so";
  fs::copy_file(std::string(TOUCHSTONE_PLUGIN_DIR) + "/libtsk_host_attention.so", so,
                fs::copy_options::overwrite_existing);
  const std::string p = write_plan("resume-plugin.json", R"({"schema": "touchstone.plan/1",
    "fixtures": ["resume-plugin-fx.h5"], "gates": ["sage_compat"], "candidates": ["plugin:)" + so + R"("]})");
  const std::string results = " --results " + d + "/resume-plugin.results";
  const Result first = cli("batch " + p + results);
  INFO(first.out << first.err);
  REQUIRE((first.code == 0 || first.code == 1));
  CHECK(cli("batch " + p + results + " --resume").out.find("--resume kept 1 of 1 cases") != std::string::npos);

  // The same path, another build of the kernel (here: another library in its place).
  fs::copy_file(std::string(TOUCHSTONE_PLUGIN_DIR) + "/libtsk_cliff.so", so, fs::copy_options::overwrite_existing);
  const Result rebuilt = cli("batch " + p + results + " --resume");
  INFO(rebuilt.out << rebuilt.err);
  CHECK(rebuilt.out.find("--resume kept 0 of 1 cases") != std::string::npos);
  CHECK(rebuilt.out.find("(1 of them judged before their fixture, its outputs, their gate file or a plugin library "
                         "changed)") != std::string::npos);
}

TEST_CASE("touchstone batch: options.pairs 0 means what gate --pairs 0 does") {
  const std::string d = plan_dir();
  const std::string p = write_plan("pairs0.json", R"({"schema": "touchstone.plan/1", "fixtures": ["fx0.h5"],
    "gates": ["sparse_acceptance"], "candidates": ["sol:tau=1.3"], "options": {"pairs": 0}})");
  const Result b = cli("batch " + p + " --results " + d + "/pairs0.results --json " + d + "/pairs0-report.json");
  INFO(b.out << b.err);
  REQUIRE(b.code == 1);
  const Result g = cli("gate --gate sparse_acceptance --fixture " + d + "/fx0.h5 --candidate sol:tau=1.3 --pairs 0 --json");
  REQUIRE(g.code == 1);
  const auto from_batch = normalised(d + "/pairs0-report.json")["runs"][0]["candidates"][0];
  const auto from_gate = nlohmann::json::parse(g.out)["candidates"][0];
  CHECK(from_batch["verdict"] == from_gate["verdict"]);
  CHECK(from_batch["rules"].size() == from_gate["rules"].size());
  for (size_t i = 0; i < from_gate["rules"].size(); ++i)
    CHECK(from_batch["rules"][i]["status"] == from_gate["rules"][i]["status"]);
  CHECK(from_gate["rules"][1]["status"] == "missing");  // the speed rule: nothing was timed
}
