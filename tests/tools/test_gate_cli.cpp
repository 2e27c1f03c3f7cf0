// End-to-end: touchstone import-report, gate and compare as a user runs them.
// Every malformed file of tests/gates/corpus gives exit code 2 and one stderr
// line naming the file and the JSON path.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "catch.hpp"
#include "cli_runner.hpp"

namespace fs = std::filesystem;

namespace {

using Result = ts::test::CliResult;
using ts::test::read_file;
const std::string& scratch() { return ts::test::scratch_dir(); }
Result cli(const std::string& args) { return ts::test::run_cli(args); }
std::string slurp(const std::string& path) { return read_file(path); }

int lines(const std::string& s) {
  int n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

const std::string kSeed = std::string(TOUCHSTONE_SOURCE_DIR) + "/tests/gates/data/gb10_sage2_vs_sol_block24.json";
const std::string kCorpus = std::string(TOUCHSTONE_SOURCE_DIR) + "/tests/gates/corpus/";

std::string seed_measurements() {
  const std::string m = scratch() + "/seed.measurements.json";
  if (!fs::exists(m)) {
    const Result r = cli("import-report " + kSeed + " -o " + m);
    REQUIRE(r.code == 0);
  }
  return m;
}

}  // namespace

TEST_CASE("gate CLI: --help on every command") {
  for (const char* c : {"gate", "import-report", "compare"}) {
    const Result r = cli(std::string(c) + " --help");
    CHECK(r.code == 0);
    CHECK(r.out.find("Usage") != std::string::npos);
  }
}

TEST_CASE("gate CLI: the seed report, imported and gated, reaches its own conclusion") {
  const std::string m = seed_measurements();
  const std::string j = scratch() + "/seed.report.json", x = scratch() + "/seed.junit.xml",
                    md = scratch() + "/seed.summary.md";
  const Result r = cli("gate --gate sparse_acceptance --measurements " + m + " --json " + j + " --junit " + x +
                       " --markdown " + md);
  CHECK(r.code == 1);
  CHECK(r.err.empty());
  CHECK(r.out.find("REJECT sol_bf16_tau_1_3") != std::string::npos);
  CHECK(r.out.find("REJECT sol_int8_qk_tau_1_3") != std::string::npos);
  CHECK(r.out.find("REJECT sol_fully_dense_tau_minus_100") != std::string::npos);
  CHECK(r.out.find("INCONCLUSIVE sol_int8_qk_pv_tau_1_3") != std::string::npos);
  CHECK(r.out.find("missing measurement: rel_l2 vs baseline (attention)") != std::string::npos);
  CHECK(r.out.find("repro: touchstone gate --gate sparse_acceptance --measurements") != std::string::npos);

  const auto report = nlohmann::json::parse(slurp(j));
  std::map<std::string, std::string> verdicts;
  for (const auto& c : report["candidates"]) verdicts[c["candidate"]] = c["verdict"];
  CHECK(verdicts["sol_bf16_tau_1_3"] == "REJECT");
  CHECK(verdicts["sol_int8_qk_tau_1_3"] == "REJECT");
  CHECK(verdicts["sol_fully_dense_tau_minus_100"] == "REJECT");
  CHECK(verdicts["sol_int8_qk_pv_tau_1_3"] == "INCONCLUSIVE");
  CHECK(report["summary"]["accept"] == 0);

  const std::string xml = slurp(x);
  CHECK(xml.rfind("<?xml", 0) == 0);
  if (fs::exists("/usr/bin/python3")) {
    // Well-formed, with one REJECT failure per failed rule (3) and one
    // INCONCLUSIVE for the missing quality figure.
    const std::string cmd =
        "/usr/bin/python3 -c \"import sys, xml.dom.minidom as m; d = m.parse(sys.argv[1]); "
        "f = [e.getAttribute('type') for e in d.getElementsByTagName('failure')]; "
        "sys.exit(0 if f.count('REJECT') == 3 and f.count('INCONCLUSIVE') == 1 else 1)\" " + x;
    CHECK(std::system(cmd.c_str()) == 0);
  }
  CHECK(slurp(md).find("0 of 4 accepted") != std::string::npos);
}

TEST_CASE("gate CLI: a modified report with a faster Sage-like variant passes") {
  auto seed = nlohmann::json::parse(slurp(kSeed));
  seed["quality_gates"]["sol_int8_qk_tau_1_3_exact_conditioning_kv_relative_l2_vs_sage2"] = 0.03;
  const std::string rep = scratch() + "/modified.json", m = scratch() + "/modified.measurements.json";
  std::ofstream(rep) << seed.dump();
  REQUIRE(cli("import-report " + rep + " -o " + m).code == 0);
  Result r = cli("gate --measurements " + m + " --candidate sol_int8_qk_tau_1_3");
  CHECK(r.code == 0);
  CHECK(r.out.find("ACCEPT") != std::string::npos);
  r = cli("gate --measurements " + m + " --candidate sol_int8_qk_tau_1_3 --candidate sol_bf16_tau_1_3");
  CHECK(r.code == 1);
  r = cli("gate --measurements " + m + " --candidate no_such_backend");
  CHECK(r.code == 2);
  CHECK(r.err.find("no backend named 'no_such_backend'") != std::string::npos);
}

TEST_CASE("gate CLI: import-report --json prints the measurements") {
  const Result r = cli("import-report " + kSeed + " --json");
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["schema"] == "touchstone.measurements/1");
  CHECK(j["entries"].size() > 40);
}

TEST_CASE("gate CLI: every malformed file of the corpus is exit 2 with one line naming the path") {
  const std::map<std::string, std::string> expect = {
      {"unknown_key.gate.json", "unknown_key.gate.json: rulez: unknown key"},
      {"unknown_rule_key.gate.json", "unknown_rule_key.gate.json: rules[0].bound: unknown key"},
      {"wrong_type.gate.json", "wrong_type.gate.json: rules[1].max: expected a number, got string"},
      {"wrong_type_bool.gate.json", "wrong_type_bool.gate.json: rules[0].optional: expected true or false, got string"},
      {"empty_rules.gate.json", "empty_rules.gate.json: rules: must hold at least one rule"},
      {"bad_json.gate.json", "bad_json.gate.json: invalid JSON at line 1, column"},
      {"empty_file.gate.json", "empty_file.gate.json: invalid JSON at line 1"},
      {"no_bound.gate.json", "no_bound.gate.json: rules[0]: rule 'a' has no bound"},
      {"unknown_metric.gate.json", "unknown_metric.gate.json: rules[0].metric: unknown metric 'relative_l2'"},
      {"duplicate_id.gate.json", "duplicate_id.gate.json: rules[1].id: duplicate rule id 'a'"},
      {"bad_against.gate.json", "bad_against.gate.json: rules[0].against: expected \"baseline\" or \"exact\""},
      {"wrong_schema.gate.json", "wrong_schema.gate.json: schema: expected \"touchstone.gate/1\""},
      {"duplicate_key.gate.json", "duplicate_key.gate.json: duplicate key 'name'"},
      {"speedup_vs_exact.gate.json", "speedup_vs_exact.gate.json: rules[0].against: speedup is measured against the baseline only"},
      {"min_above_max.gate.json", "min_above_max.gate.json: rules[0].min: min 0.1 is above max 0.05"},
      {"rules_not_array.gate.json", "rules_not_array.gate.json: rules: expected an array, got string"},
      {"not_object.gate.json", "not_object.gate.json: top level: expected an object, got array"},
      {"confidence_on_accuracy.gate.json", "confidence_on_accuracy.gate.json: rules[0].confidence: only a speedup rule"},
      {"unknown_tensor.gate.json", "unknown_tensor.gate.json: tensor: unknown tensor 'mlp'"},
      {"unknown_key.measurements.json", "unknown_key.measurements.json: entries[0].colour: unknown key"},
      {"wrong_type.measurements.json", "wrong_type.measurements.json: entries[0].value: expected a number, got string"},
      {"empty_entries.measurements.json", "empty_entries.measurements.json: entries: must hold at least one measurement"},
      {"bad_json.measurements.json", "bad_json.measurements.json: invalid JSON at line"},
      {"missing_against.measurements.json", "missing_against.measurements.json: entries[0].against: missing"},
      {"bad_unit.measurements.json", "bad_unit.measurements.json: entries[0].unit: expected \"ms\" or \"s\""},
      {"wrong_schema.measurements.json", "wrong_schema.measurements.json: schema: expected \"touchstone.measurements/1\""},
      {"bad_sample.measurements.json", "bad_sample.measurements.json: entries[0].samples[1]: expected a positive number"},
      {"duplicate_entry.measurements.json", "duplicate_entry.measurements.json: entries[1]: duplicate measurement"},
      {"bad_timing.report.json", "bad_timing.report.json: representative_block_24_p50_milliseconds.sage2.attention: expected a number, got string"},
      {"no_figures.report.json", "no_figures.report.json: no timing or quality figures found"},
      {"bad_json.report.json", "bad_json.report.json: invalid JSON at line"},
  };
  // Every file of the corpus has its expectation here, and vice versa.
  int files = 0;
  for (const auto& e : fs::directory_iterator(kCorpus)) {
    ++files;
    CHECK(expect.count(e.path().filename().string()) == 1);
  }
  CHECK(files == static_cast<int>(expect.size()));

  const std::string m = seed_measurements();
  for (const auto& [file, want] : expect) {
    const std::string path = kCorpus + file;
    std::string args;
    if (file.find(".gate.json") != std::string::npos) args = "gate --gate " + path + " --measurements " + m;
    else if (file.find(".measurements.json") != std::string::npos) args = "gate --gate sparse_acceptance --measurements " + path;
    else args = "import-report " + path + " -o " + scratch() + "/never.json";
    INFO(args);
    const Result r = cli(args);
    CHECK(r.code == 2);
    CHECK(lines(r.err) == 1);
    CHECK(r.err.find(want) != std::string::npos);
    CHECK(r.out.empty());
  }
  CHECK_FALSE(fs::exists(scratch() + "/never.json"));

  // A missing file, bad flags, and both inputs at once.
  Result r = cli("gate --gate " + kCorpus + "absent.gate.json --measurements " + m);
  CHECK(r.code == 2);
  CHECK(r.err.find("absent.gate.json: cannot open file") != std::string::npos);
  r = cli("gate --measurements " + kCorpus + "absent.measurements.json");
  CHECK(r.code == 2);
  CHECK(lines(r.err) == 1);
  r = cli("import-report " + kCorpus + "absent.report.json -o x.json");
  CHECK(r.code == 2);
  r = cli("gate --gate sparse_acceptance");
  CHECK(r.code == 2);
  CHECK(r.err.find("exactly one of --fixture") != std::string::npos);
  r = cli("gate --measurements " + m + " --pairs many");
  CHECK(r.code == 2);
  CHECK(lines(r.err) == 1);
}

TEST_CASE("gate CLI: running backends on a fixture") {
  const std::string f = scratch() + "/tiny.h5";
  Result r = cli("fixture synth --force --preset tiny --seed 3 -o " + f);
  REQUIRE(r.code == 0);
  const std::string j = scratch() + "/fixture.report.json";
  // The exact reference against itself is bit exact.
  r = cli("gate --gate bit_exact --fixture " + f + " --baseline exact --candidate exact --json " + j);
  CHECK(r.code == 0);
  CHECK(r.out.find("ACCEPT") != std::string::npos);
  // A sparse candidate against sage2 on the default gate: accuracy judged,
  // speed not (both are emulations: their time is not a kernel's);
  // every rule has a figure or a reason, and a repro is given unless accepted.
  r = cli("gate --fixture " + f + " --candidate sol:tau=1.3 --candidate exact --pairs 4 --warmup 1 --json " + j);
  CHECK((r.code == 0 || r.code == 1));
  const auto rep = nlohmann::json::parse(slurp(j));
  REQUIRE(rep["candidates"].size() == 2);
  for (const auto& c : rep["candidates"]) {
    CHECK(c["rules"][0]["id"] == "sage_like");
    CHECK(c["rules"][0]["figure"].is_number());
    CHECK(c["rules"][1]["status"] == "missing");
    CHECK(c["rules"][1]["message"].get<std::string>().find("is an emulation") != std::string::npos);
    CHECK(c["verdict"] != "ACCEPT");
    if (c["verdict"] != "ACCEPT") {
      CHECK(c["repro"].get<std::string>().find("touchstone gate --gate sparse_acceptance --fixture") == 0);
    }
  }
  // A bad candidate spec is bad input, not a verdict.
  r = cli("gate --fixture " + f + " --candidate nosuchkernel");
  CHECK(r.code == 2);
  CHECK(lines(r.err) == 1);

  // compare: a stored output against itself and against the exact reference.
  r = cli("reference " + f + " --backend exact");
  REQUIRE(r.code == 0);
  r = cli("compare " + f + " exact /outputs/exact/attention --json");
  REQUIRE(r.code == 0);
  const auto cmp = nlohmann::json::parse(r.out);
  CHECK(cmp["metrics"]["rel_l2"] == 0.0);
  CHECK(cmp["metrics"]["ulp_max"] == 0.0);
  r = cli("compare " + f + " exact exact --breakdown");
  CHECK(r.code == 0);
  CHECK(r.out.find("worst heads") != std::string::npos);
  r = cli("compare " + f + " nosuch exact");
  CHECK(r.code == 2);
  CHECK(r.err.find("no dataset /outputs/nosuch/attention") != std::string::npos);
  fs::remove_all(scratch());
}

TEST_CASE("gate CLI: the exact reference as baseline of a ratio rule is bad input naming the rules and what to use") {
  fs::create_directories(scratch());  // an earlier case may have emptied it
  const std::string f = scratch() + "/exact_baseline.h5";
  REQUIRE(cli("fixture synth --preset tiny --seed 3 -o " + f + " --force").code == 0);
  REQUIRE(cli("reference " + f + " --backend exact").code == 0);
  // A relative bound against exact's own error (0) would REJECT every kernel but exact itself.
  for (const char* base : {"exact", "exact:precision=fp32", "stored:exact"}) {
    const std::string j = scratch() + "/exact_baseline.json";
    fs::remove(j);
    const Result r = cli("gate --gate sage_compat --fixture " + f + " --baseline " + base + " --candidate sage2 --json " + j);
    INFO(base << ": " << r.out << r.err);
    CHECK(r.code == 2);
    CHECK(lines(r.err) == 1);
    CHECK(r.err.find("rule(s) 'vs_exact', 'head_vs_exact', 'qblock_vs_exact', 'frame_vs_exact'") != std::string::npos);
    CHECK(r.err.find("e.g. sage2:preset=") != std::string::npos);
    CHECK(r.out.empty());
    CHECK_FALSE(fs::exists(j));
  }
  // A gate without such a rule takes the exact baseline, and the emulation as baseline still judges.
  CHECK(cli("gate --gate bit_exact --fixture " + f + " --baseline exact --candidate exact").code == 0);
  CHECK(cli("gate --gate sage_compat --fixture " + f + " --baseline sage2 --candidate exact").code == 0);
}
