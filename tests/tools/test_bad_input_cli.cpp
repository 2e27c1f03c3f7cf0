// End to end: a mistake in the command or in a file is exit 2 before any work, in one line on
// stderr that names what is wrong and lists what exists (gates, stored outputs, backend keys,
// segment kinds, commands, the nearest first); a number's message says what is wrong with it.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "catch.hpp"
#include "cli_runner.hpp"
#include "core/block_config.hpp"
#include "drivers/run_estimate.hpp"
#include "fixtures/fixture.hpp"

namespace fs = std::filesystem;

namespace {

using ts::test::CliResult;
using Result = CliResult;
CliResult cli(const std::string& args) { return ts::test::run_cli(args); }
const std::string& dir() { return ts::test::scratch_dir(); }

int lines(const std::string& s) {
  int n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

// A tiny fixture with the exact output stored (stored:exact exists).
const std::string& tiny() {
  static const std::string f = [] {
    const std::string p = dir() + "/bad_input_tiny.h5";
    REQUIRE(cli("fixture synth --preset tiny --seed 3 -o " + p).code == 0);
    REQUIRE(cli("reference " + p + " --backend exact").code == 0);
    return p;
  }();
  return f;
}

// One line on stderr, nothing on stdout, exit 2: bad input, before any work.
void bad_input(const CliResult& r, const std::string& want) {
  INFO("stdout: " << r.out << "\nstderr: " << r.err);
  CHECK(r.code == 2);
  CHECK(lines(r.err) == 1);
  CHECK(r.out.empty());
  CHECK(r.err.find(want) != std::string::npos);
}

}  // namespace

TEST_CASE("bad input: an unknown gate lists the built-ins; a bare word is never a file") {
  bad_input(cli("gate --gate sage_compt --fixture " + tiny() + " --candidate exact"),
            "unknown gate 'sage_compt' (did you mean 'sage_compat'? built-ins: sparse_acceptance, sage_compat");
  // A file named like a built-in in the working folder does not replace it;
  // ./NAME names the file.
  const fs::path old = fs::current_path();
  const std::string here = dir() + "/gate_cwd";
  fs::create_directories(here);
  std::ofstream(here + "/sage_compat") << "not a gate";
  fs::current_path(here);
  const CliResult builtin = cli("gate --gate sage_compat --fixture " + tiny() + " --candidate stored:exact");
  const CliResult file = cli("gate --gate ./sage_compat --fixture " + tiny() + " --candidate stored:exact");
  fs::current_path(old);
  INFO(builtin.out << builtin.err);
  CHECK((builtin.code == 0 || builtin.code == 1));
  CHECK(builtin.out.find("(builtin:sage_compat)") != std::string::npos);
  CHECK(file.code == 2);
  CHECK(file.err.find("./sage_compat") != std::string::npos);
}

TEST_CASE("bad input: an unknown stored output, backend key or plugin path is exit 2 naming what exists") {
  bad_input(cli("gate --gate sage_compat --fixture " + tiny() + " --candidate stored:exakt"),
            "no stored output 'exakt' (stored:exakt reads /outputs/exakt/attention; did you mean 'exact'? "
            "stored outputs: exact");
  bad_input(cli("gate --gate sage_compat --fixture " + tiny() + " --candidate stored:exact --candidate sol:tua=1.3"),
            "unknown parameter tua (did you mean 'tau'? known for sol: ");
  const CliResult k = cli("gate --gate sage_compat --fixture " + tiny() + " --candidate sol:tua=1.3");
  CHECK(k.err.find("precision") != std::string::npos);
  CHECK(k.err.find("selector") != std::string::npos);
  // A plugin path that names no file: the path, not a rejected kernel.
  bad_input(cli("gate --gate sage_compat --fixture " + tiny() + " --candidate exact --candidate plugin:/nonexistent.so"),
            "no plugin file /nonexistent.so");
}

TEST_CASE("bad input: a stored output of the wrong shape is exit 2 naming both shapes") {
  const std::string f = dir() + "/bad_input_shape.h5";
  REQUIRE(cli("fixture synth --preset tiny --seed 4 -o " + f).code == 0);
  const ts::Fixture fx = ts::load_fixture(f);
  // touchstone's own writers refuse an output of the wrong shape; h5py
  // writes what a capture script with a bug would.
  const std::string py = "/usr/bin/python3 -c \"import sys, h5py, numpy as np; f = h5py.File(sys.argv[1], 'a'); "
                         "d = f.create_dataset('/outputs/short/attention', data=np.zeros((" +
                         std::to_string(fx.q.shape[0] - 1) + ", " + std::to_string(fx.q.shape[1]) + ", " +
                         std::to_string(fx.q.shape[2]) + "), np.float32)); "
                         "[d.attrs.__setitem__(k, 'x') for k in ('backend', 'params', 'touchstone_version', "
                         "'created_at')]\" " + f;
  if (std::system(py.c_str()) != 0) {
    WARN("skipped: no /usr/bin/python3 with h5py to write a malformed output");
    return;
  }
  const std::string S = std::to_string(fx.q.shape[0]), H = std::to_string(fx.q.shape[1]),
                    D = std::to_string(fx.q.shape[2]);
  bad_input(cli("gate --gate sage_compat --fixture " + f + " --candidate exact --candidate stored:short"),
            "/outputs/short/attention: shape [" + std::to_string(fx.q.shape[0] - 1) + ", " + H + ", " + D +
                "], expected [S, H, D] = [" + S + ", " + H + ", " + D + "]");
}

TEST_CASE("bad input: a typo'd segment kind names the kinds") {
  const std::string f = dir() + "/bad_input_kind.h5";
  REQUIRE(cli("fixture synth --preset tiny --seed 5 -o " + f).code == 0);
  nlohmann::json bad = nlohmann::json::parse(ts::segments_to_json(ts::load_fixture(f).config.segments));
  bad[0]["kind"] = "vid";
  ts::edit_attrs(f, "/config", {{"segments", bad.dump()}});
  bad_input(cli("fixture validate " + f),
            "segments[0].kind is \"vid\", not a segment kind (did you mean 'video'? kinds: video, cond");
  bad_input(cli("gate --gate sage_compat --fixture " + f + " --candidate exact"), "segments[0].kind is \"vid\"");
}

TEST_CASE("bad input: bit_exact between storage types is an error that says so") {
  // exact writes float64, the sage2 emulation bfloat16: no bits to compare.
  bad_input(cli("gate --gate bit_exact --fixture " + tiny() + " --baseline sage2 --candidate exact"),
            "claims bit-exactness, but on attention the candidate 'exact' is stored as float64 and the baseline as "
            "bfloat16");
  // One type on both sides is judged as before.
  const CliResult same = cli("gate --gate bit_exact --fixture " + tiny() + " --baseline exact --candidate stored:exact");
  INFO(same.out << same.err);
  CHECK(same.code == 0);
}

TEST_CASE("bad input: an unknown or missing command names the commands, the nearest first") {
  bad_input(cli("gat " + tiny()), "unknown command 'gat' for touchstone (did you mean 'gate'? commands: batch,");
  bad_input(cli("fixture synt --preset tiny"), "unknown command 'synt' for touchstone fixture (did you mean 'synth'?");
  bad_input(cli(""), "touchstone needs a command (batch, chain, compare,");
  bad_input(cli("bench"), "touchstone bench needs a command (block, emulation, io, reference;");
  // Internal commands are not offered.
  CHECK(cli("bogus").err.find("__") == std::string::npos);
}

TEST_CASE("bad input: a numeric flag's message says what is wrong with the value") {
  bad_input(cli("gate " + tiny() + " --pairs 5abc"), "--pairs: '5abc' is not a whole number");
  bad_input(cli("gate " + tiny() + " --pairs -1"), "--pairs: -1 is out of range: expected 0 to 1000000");
  bad_input(cli("gate " + tiny() + " --budget-s nan"), "--budget-s: 'nan' is not a finite number");
  bad_input(cli("gate " + tiny() + " --budget-s -1"), "--budget-s: -1 is out of range: expected a number >= 0");
  bad_input(cli("compare " + tiny() + " --top -1"), "--top: -1 is out of range: expected 1 to 1000000");
  bad_input(cli("scan --candidate sage2 --from 0 --to 64"), "--from: 0 is out of range: expected 1 to");
  bad_input(cli("sweep " + tiny() + " --pairs 99999999999999999999"), "--pairs: 99999999999999999999 is out of range");
  // A negative seed is refused alike by every command that takes one (it once wrapped to 2^64 - 5).
  for (const std::string& cmd : std::vector<std::string>{"fixture synth --preset tiny -o /tmp/never.h5", "gate " + tiny(), "sweep " + tiny(),
                                "demo", "chain " + tiny(), "bench reference --preset tiny"})
    bad_input(cli(cmd + " --seed -5"), "--seed: -5 is out of range: expected at least 0");
  // No bound of 1.8e308 in a message or in --help.
  CHECK(cli("scan --help").out.find("1797693") == std::string::npos);
}

TEST_CASE("bad input: an empty or non-numeric tau is bad input, not a row at tau 0") {
  bad_input(cli("sweep " + tiny() + " --tau ''"), "--tau: empty: expected numbers separated by commas");
  bad_input(cli("sweep " + tiny() + " --tau 1.3,x"), "--tau: 'x' is not a finite number");
}

TEST_CASE("bad input: a misspelt gate-file key is an unknown key with the nearest, whatever it hides") {
  const std::string againts = dir() + "/againts.gate.json", mx = dir() + "/mx.gate.json";
  std::ofstream(againts) << R"({"schema": "touchstone.gate/1", "name": "g", "rules": [
    {"id": "a", "metric": "rel_l2", "againts": "exact", "max_ratio_to_baseline": 2}]})";
  std::ofstream(mx) << R"({"schema": "touchstone.gate/1", "name": "g", "rules": [
    {"id": "a", "metric": "rel_l2", "mx": 0.1}]})";
  bad_input(cli("gate --gate " + againts + " --fixture " + tiny() + " --candidate exact"),
            "rules[0].againts: unknown key (did you mean 'against'? keys: id, metric, against,");
  bad_input(cli("gate --gate " + mx + " --fixture " + tiny() + " --candidate exact"),
            "rules[0].mx: unknown key (did you mean 'max'? keys: ");
}

TEST_CASE("bad input: compare takes stored:NAME as gate does, and explains another backend spec") {
  const CliResult r = cli("compare " + tiny() + " stored:exact exact");
  INFO(r.out << r.err);
  CHECK(r.code == 0);
  CHECK(r.out.find("/outputs/exact/attention (float64) vs /outputs/exact/attention") != std::string::npos);
  bad_input(cli("compare " + tiny() + " sol:tau=1.3 exact"), "'sol:tau=1.3' is a backend spec; compare reads stored tensors");
}

TEST_CASE("bad input: reference --tau and sweep --tau say the same of a bad value") {
  const CliResult ref = cli("reference " + tiny() + " --backend sol --tau abc");
  const CliResult sweep = cli("sweep " + tiny() + " --tau abc");
  bad_input(ref, "--tau: 'abc' is not a finite number");
  bad_input(sweep, "--tau: 'abc' is not a finite number");
  CHECK(ref.err == sweep.err);
}

TEST_CASE("bad input: usage and environment errors exit 2 before any work, not as verdicts") {
  const std::string f = tiny();
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
    const Result r = cli("gate --fixture " + dir() + "/no_such_fixture.h5 --candidate sol " + flag +
                         " " + dir() + "/nodir/r.out");
    INFO(flag << ": " << r.err);
    CHECK(r.code == 2);
    CHECK(r.err.find("nodir") != std::string::npos);
    CHECK(r.err.find("no_such_fixture") == std::string::npos);
  }
  const Result cmp = cli("compare " + dir() + "/no_such_fixture.h5 a b --json " + dir() + "/nodir/c.json");
  CHECK(cmp.code == 2);
  CHECK(cmp.err.find("nodir") != std::string::npos);
}

TEST_CASE("bad input: demo --keep never replaces a fixture already kept there") {
  const std::string keep = dir() + "/demo_keep";
  fs::create_directories(keep);
  const std::string kept = keep + "/demo_tiny.h5";
  // A user's fixture under the demo's name, with a stored output beside it.
  REQUIRE(cli("fixture synth --preset tiny --seed 9 -o " + kept).code == 0);
  REQUIRE(cli("reference " + kept + " --backend exact").code == 0);
  const auto before = fs::last_write_time(kept);
  const auto size = fs::file_size(kept);
  bad_input(cli("demo --preset tiny --keep " + keep), "demo_tiny.h5 exists");
  CHECK(fs::last_write_time(kept) == before);
  CHECK(fs::file_size(kept) == size);
  CHECK(cli("fixture validate " + kept).code == 0);
}

TEST_CASE("bad input: history --metric that no gate metric or recorded rule id is names what is known") {
  const std::string db = dir() + "/bad_input_metric.db";
  fs::remove(db);
  REQUIRE(cli("gate --gate bit_exact --fixture " + tiny() + " --candidate sage2 --record " + db).code == 0);
  bad_input(cli("history " + db + " --regressions --metric rel_l3"),
            "--metric 'rel_l3': no such metric or rule id (did you mean 'rel_l2'? metrics: rel_l2, cosine,");
  bad_input(cli("history " + db + " --metric typo"), "rule ids recorded: bit_exact, finite)");
  // A gate metric nothing recorded, and a rule id that is no metric name, are filters.
  CHECK(cli("history " + db + " --regressions --metric cosine").code == 0);
  const Result by_id = cli("history " + db + " --metric finite");
  INFO(by_id.out << by_id.err);
  CHECK(by_id.code == 0);
}

TEST_CASE("bad input: a backend parameter of inf or nan is not a finite number") {
  for (const std::string spec : {"sol:tau=inf", "sol:tau=-inf", "sol:tau=nan"})
    bad_input(cli("gate --gate bit_exact --fixture " + tiny() + " --candidate " + spec),
              "backend '" + spec + "': tau=" + spec.substr(8) + " is not a finite number");
}

TEST_CASE("bad input: triage --top below 1 is out of range, not a wrapped-around count") {
  bad_input(cli("triage " + tiny() + " --candidate sage2 --top -1"), "--top: -1 is out of range: expected 1 to 1000000");
  bad_input(cli("triage " + tiny() + " --candidate sage2 --top 0"), "--top: 0 is out of range");
}

TEST_CASE("bad input: a list with an empty item or a value given twice names it") {
  bad_input(cli("sweep " + tiny() + " --tau 1,,2"), "--tau: '1,,2': an empty item: expected numbers separated by commas");
  bad_input(cli("sweep " + tiny() + " --tau 1,"), "an empty item");
  bad_input(cli("sweep " + tiny() + " --tau 1.3,2,1.30"), "--tau: 1.30 given twice");
  bad_input(cli("sweep " + tiny() + " --tau 1 --tau 1"), "--tau: 1 given twice");
  bad_input(cli("policy " + tiny() + " --tau 1,,2"), "an empty item");
  bad_input(cli("sweep " + tiny() + " --tau 1 --stored exact,exact"), "--stored exact given twice");
  bad_input(cli("gate --gate bit_exact --fixture " + tiny() + " --candidate sage2 --candidate sage2"),
            "--candidate sage2 given twice");
  bad_input(cli("chain " + tiny() + " --candidate sage2 -c sage2"), "--candidate sage2 given twice");
  // Lists that are fine still are.
  const Result ok = cli("sweep " + tiny() + " --tau 1,1.3 --tau 2 --json");
  INFO(ok.err);
  CHECK(ok.code == 0);
  CHECK(nlohmann::json::parse(ok.out)["rows"].size() >= 3);
}

TEST_CASE("bad input: compare of two shapes names the file and both datasets") {
  bad_input(cli("compare " + tiny() + " /block/positions exact"),
            tiny() + ": A /block/positions is [72, 3], B /outputs/exact/attention is [72, 2, 32]: compare needs two "
            "tensors of one shape");
}

TEST_CASE("bad input: history --gate that no recorded run was judged by names the gates recorded") {
  const std::string db = dir() + "/bad_input_gate.db";
  fs::remove(db);
  REQUIRE(cli("gate --gate bit_exact --fixture " + tiny() + " --candidate sage2 --record " + db).code == 0);
  bad_input(cli("history " + db + " --regressions --gate bit_exakt"),
            "--gate 'bit_exakt': no recorded run was judged by a gate of that name (did you mean 'bit_exact'? "
            "gates recorded: bit_exact)");
  bad_input(cli("history " + db + " --gate typo"), "gates recorded: bit_exact)");
  const CliResult known = cli("history " + db + " --gate bit_exact --json");
  INFO(known.out << known.err);
  CHECK(known.code == 0);
  CHECK(known.out.find("\"gate\": \"bit_exact\"") != std::string::npos);
}
