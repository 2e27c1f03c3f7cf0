// End-to-end: the first hour's messages (issue 25). Reports fit the width a
// CI log or a terminal has; a mistake in the command or in a file is exit 2
// before any work, one line listing what exists; a kernel that runs and
// fails stays a REJECT.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "catch.hpp"
#include "cli_runner.hpp"
#include "text_lines.hpp"
#include "core/block_config.hpp"
#include "fixtures/fixture.hpp"

namespace fs = std::filesystem;

namespace {

using ts::test::CliResult;
CliResult cli(const std::string& args) { return ts::test::run_cli(args); }
const std::string& dir() { return ts::test::scratch_dir(); }

int lines(const std::string& s) {
  int n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

using ts::test::widest;

// A tiny fixture with the exact output stored (stored:exact exists).
const std::string& tiny() {
  static const std::string f = [] {
    const std::string p = dir() + "/messages_tiny.h5";
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

// The environment of the CLI runs: COLUMNS as given (unset for nullptr).
struct Columns {
  std::string saved;
  bool had;
  explicit Columns(const char* v) : had(std::getenv("COLUMNS") != nullptr) {
    if (had) saved = std::getenv("COLUMNS");
    if (v) ::setenv("COLUMNS", v, 1);
    else ::unsetenv("COLUMNS");
  }
  ~Columns() {
    if (had) ::setenv("COLUMNS", saved.c_str(), 1);
    else ::unsetenv("COLUMNS");
  }
};

}  // namespace

TEST_CASE("messages CLI: sage_compat on ci with four candidates fits 100 columns off a terminal") {
  const std::string f = dir() + "/messages_ci.h5";
  REQUIRE(cli("fixture synth --preset ci --seed 1 -o " + f).code == 0);
  const std::string run = "gate --gate sage_compat --fixture " + f +
                          " --candidate exact --candidate exact:precision=fp32 --candidate sage2:preset=sm90"
                          " --candidate sol:tau=1.3 --pairs 3 --warmup 0 --rotate 1";
  {
    const Columns unset(nullptr);  // stdout is a file here: 100 columns
    const CliResult r = cli(run);
    INFO(r.out << r.err);
    CHECK(r.code == 1);  // sol:tau=1.3 is not Sage-like
    CHECK(widest(r.out) <= 100);
    CHECK(widest(r.out) > 60);  // it used the width it had
    for (const char* c : {"exact\n", "exact:precision=fp32\n", "sage2:preset=sm90\n", "sol:tau=1.3\n"})
      CHECK(r.out.find(std::string(" ") + c) != std::string::npos);  // each candidate heads its block
    CHECK(r.out.find("REJECT sol:tau=1.3\n") != std::string::npos);
    CHECK(r.out.find("sage_like [fail]:") != std::string::npos);
    CHECK(r.out.find("summary: ") != std::string::npos);
  }
  {
    const Columns narrow("72");
    const CliResult r = cli(run);
    CHECK(widest(r.out) <= 72);
    CHECK(r.out.find("REJECT sol:tau=1.3\n") != std::string::npos);
  }
}

TEST_CASE("messages CLI: an unknown gate lists the built-ins; a bare word is never a file") {
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

TEST_CASE("messages CLI: an unknown stored output, backend key or plugin path is exit 2 naming what exists") {
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

TEST_CASE("messages CLI: a stored output of the wrong shape is exit 2 naming both shapes") {
  const std::string f = dir() + "/messages_shape.h5";
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

TEST_CASE("messages CLI: a typo'd segment kind names the kinds") {
  const std::string f = dir() + "/messages_kind.h5";
  REQUIRE(cli("fixture synth --preset tiny --seed 5 -o " + f).code == 0);
  nlohmann::json bad = nlohmann::json::parse(ts::segments_to_json(ts::load_fixture(f).config.segments));
  bad[0]["kind"] = "vid";
  ts::edit_attrs(f, "/config", {{"segments", bad.dump()}});
  bad_input(cli("fixture validate " + f),
            "segments[0].kind is \"vid\", not a segment kind (did you mean 'video'? kinds: video, cond");
  bad_input(cli("gate --gate sage_compat --fixture " + f + " --candidate exact"), "segments[0].kind is \"vid\"");
}

TEST_CASE("messages CLI: bit_exact between storage types is an error that says so") {
  // exact writes float64, the sage2 emulation bfloat16: no bits to compare.
  bad_input(cli("gate --gate bit_exact --fixture " + tiny() + " --baseline sage2 --candidate exact"),
            "claims bit-exactness, but on attention the candidate 'exact' is stored as float64 and the baseline as "
            "bfloat16");
  // One type on both sides is judged as before.
  const CliResult same = cli("gate --gate bit_exact --fixture " + tiny() + " --baseline exact --candidate stored:exact");
  INFO(same.out << same.err);
  CHECK(same.code == 0);
}

TEST_CASE("messages CLI: an unknown or missing command names the commands, the nearest first") {
  bad_input(cli("gat " + tiny()), "unknown command 'gat' for touchstone (did you mean 'gate'? commands: batch,");
  bad_input(cli("fixture synt --preset tiny"), "unknown command 'synt' for touchstone fixture (did you mean 'synth'?");
  bad_input(cli(""), "touchstone needs a command (batch, chain, compare,");
  bad_input(cli("bench"), "touchstone bench needs a command (block, emulation, reference;");
  // Internal commands are not offered.
  CHECK(cli("bogus").err.find("__") == std::string::npos);
}

TEST_CASE("messages CLI: a numeric flag's message says what is wrong with the value") {
  bad_input(cli("gate " + tiny() + " --pairs 5abc"), "--pairs: '5abc' is not a whole number");
  bad_input(cli("gate " + tiny() + " --pairs 0"), "--pairs: 0 is out of range: expected 1 to 1000000");
  bad_input(cli("gate " + tiny() + " --budget-s nan"), "--budget-s: 'nan' is not a finite number");
  bad_input(cli("gate " + tiny() + " --budget-s -1"), "--budget-s: -1 is out of range: expected a number >= 0");
  bad_input(cli("compare " + tiny() + " --top -1"), "--top: -1 is out of range: expected 1 to 1000000");
  bad_input(cli("scan --candidate sage2 --from 0 --to 64"), "--from: 0 is out of range: expected 1 to");
  bad_input(cli("sweep " + tiny() + " --pairs 99999999999999999999"), "--pairs: 99999999999999999999 is out of range");
  // No bound of 1.8e308 in a message or in --help.
  CHECK(cli("scan --help").out.find("1797693") == std::string::npos);
}

TEST_CASE("messages CLI: an empty or non-numeric tau is bad input, not a row at tau 0") {
  bad_input(cli("sweep " + tiny() + " --tau ''"), "--tau: empty: expected numbers separated by commas");
  bad_input(cli("sweep " + tiny() + " --tau 1.3,x"), "--tau: 'x' is not a finite number");
}

TEST_CASE("messages CLI: a sweep says its emulated rows were not timed, and fits 100 columns") {
  const Columns unset(nullptr);
  const auto r = cli("sweep " + tiny() + " --tau 1.3 --gate sparse_acceptance --pairs 3");
  INFO(r.out << r.err);
  CHECK(r.code == 1);
  CHECK(r.out.find("computed rows\n    not timed: the rows are an emulation") != std::string::npos);
  CHECK(r.out.find("timed in 3 pairs") == std::string::npos);
  CHECK(widest(r.out) <= 100);
}

TEST_CASE("messages CLI: a misspelt gate-file key is an unknown key with the nearest, whatever it hides") {
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

TEST_CASE("messages CLI: compare takes stored:NAME as gate does, and explains another backend spec") {
  const CliResult r = cli("compare " + tiny() + " stored:exact exact");
  INFO(r.out << r.err);
  CHECK(r.code == 0);
  CHECK(r.out.find("/outputs/exact/attention (float64) vs /outputs/exact/attention") != std::string::npos);
  bad_input(cli("compare " + tiny() + " sol:tau=1.3 exact"), "'sol:tau=1.3' is a backend spec; compare reads stored tensors");
}

TEST_CASE("messages CLI: reference --tau and sweep --tau say the same of a bad value") {
  const CliResult ref = cli("reference " + tiny() + " --backend sol --tau abc");
  const CliResult sweep = cli("sweep " + tiny() + " --tau abc");
  bad_input(ref, "--tau: 'abc' is not a finite number");
  bad_input(sweep, "--tau: 'abc' is not a finite number");
  CHECK(ref.err == sweep.err);
}

TEST_CASE("messages CLI: a NaN in the candidate is reported once, the rules it fails named in one line") {
  const std::string f = dir() + "/messages_nan.h5";
  REQUIRE(cli("fixture synth --preset tiny --seed 6 -o " + f).code == 0);
  const std::string py = "PYTHONPATH=" + std::string(TOUCHSTONE_SOURCE_DIR) + "/python /usr/bin/python3 -c \""
                         "import sys, numpy as np, touchstone as t; fx = t.read_fixture(sys.argv[1]); "
                         "out = np.asarray(fx.q, dtype=np.float32).copy(); out[5, 0, 3] = np.nan; "
                         "t.add_output(sys.argv[1], 'nanny', out)\" " + f;
  if (std::system(py.c_str()) != 0) {
    WARN("skipped: no /usr/bin/python3 with numpy and h5py to store a NaN output");
    return;
  }
  const Columns unset(nullptr);
  const CliResult r = cli("gate --gate sage_compat --fixture " + f + " --candidate stored:nanny");
  INFO(r.out << r.err);
  CHECK(r.code == 1);
  CHECK(r.out.find("REJECT stored:nanny\n") != std::string::npos);
  size_t said = 0;
  for (size_t at = r.out.find("non-finite values"); at != std::string::npos; at = r.out.find("non-finite values", at + 1))
    ++said;
  CHECK(said == 2);  // the rules' line and finite_guard's count
  CHECK(r.out.find("  sage_like, direction, vs_exact, ") != std::string::npos);
  CHECK(r.out.find("finite_guard [fail]: 1 non-finite values in the candidate (NaN never passes)") != std::string::npos);
  CHECK(widest(r.out) <= 100);
}
