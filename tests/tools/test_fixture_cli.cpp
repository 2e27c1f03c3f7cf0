// End-to-end: touchstone fixture synth / inspect / validate as a user runs
// them. Bad input gives exit code 2 and exactly one stderr line naming the
// file and the dataset.
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "catch.hpp"
#include "cli_runner.hpp"
#include "text_lines.hpp"
#include "fixtures/fixture.hpp"

namespace fs = std::filesystem;

namespace {

using Run = ts::test::CliResult;
const std::string& fixture_dir() { return ts::test::scratch_dir(); }
Run touchstone(const std::string& args) { return ts::test::run_cli(args); }

int line_count(const std::string& s) {
  int n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

// Exit 2, one stderr line naming `file` and `object`.
void expect_bad_input(const Run& r, const std::string& file, const std::string& object,
                      const std::string& words) {
  INFO("stdout: " << r.out << "\nstderr: " << r.err);
  CHECK(r.code == 2);
  CHECK(line_count(r.err) == 1);
  CHECK(r.err.find(file + ": " + object + ":") != std::string::npos);
  CHECK(r.err.find(words) != std::string::npos);
}

using ts::test::widest;

}  // namespace

TEST_CASE("fixture synth, validate and inspect on a good file", "[cli][fixture]") {
  const std::string f = fixture_dir() + "/tiny.h5";
  Run r = touchstone("fixture synth --force --preset tiny --seed 3 --structure 0.6 -o " + f);
  INFO(r.err);
  REQUIRE(r.code == 0);
  CHECK(r.out.find("wrote " + f) != std::string::npos);
  CHECK(r.err.empty());

  r = touchstone("fixture validate " + f);
  CHECK(r.code == 0);
  CHECK(r.out.rfind("ok: " + f, 0) == 0);

  r = touchstone("fixture validate --json " + f);
  REQUIRE(r.code == 0);
  auto j = nlohmann::json::parse(r.out);
  CHECK(j["ok"] == true);
  CHECK(j["S"] == 72);

  r = touchstone("fixture inspect " + f);
  CHECK(r.code == 0);
  CHECK(r.out.find("/attention/q [72,2,32] bfloat16") != std::string::npos);
  CHECK(widest(r.out) <= 100);
  CHECK(r.out.find("@schema = \"touchstone.fixture/1\"") != std::string::npos);

  r = touchstone("fixture inspect --json " + f);
  REQUIRE(r.code == 0);
  j = nlohmann::json::parse(r.out);
  CHECK(j["attrs"]["seed"] == 3);
  bool found = false;
  for (const auto& o : j["objects"])
    if (o["path"] == "/block/positions") {
      found = true;
      CHECK(o["dtype"] == "float64");
      CHECK(o["nan"] == 0);
    }
  CHECK(found);

  // Same seed, same bits; --compress changes storage only.
  const std::string g = fixture_dir() + "/tiny2.h5";
  REQUIRE(touchstone("fixture synth --force --preset tiny --seed 3 --structure 0.6 --compress -o " + g).code == 0);
  CHECK(ts::read_tensor(f, "/attention/k").data == ts::read_tensor(g, "/attention/k").data);

  for (const char* sub : {"synth", "inspect", "validate"}) {
    r = touchstone(std::string("fixture ") + sub + " --help");
    CHECK(r.code == 0);
    CHECK(r.out.find("Usage") != std::string::npos);
  }
}

TEST_CASE("fixture validate: bad files exit 2 with one line", "[cli][fixture]") {
  const std::string good = fixture_dir() + "/good.h5";
  REQUIRE(touchstone("fixture synth --force --preset tiny -o " + good).code == 0);

  const std::string text = fixture_dir() + "/notes.txt";
  std::ofstream(text) << "not hdf5\n";
  expect_bad_input(touchstone("fixture validate " + text), text, "/", "not an HDF5 file");
  expect_bad_input(touchstone("fixture inspect " + text), text, "/", "not an HDF5 file");

  const std::string missing = fixture_dir() + "/absent.h5";
  expect_bad_input(touchstone("fixture validate " + missing), missing, "/", "file not found");

  const std::string truncated = fixture_dir() + "/truncated.h5";
  fs::copy_file(good, truncated, fs::copy_options::overwrite_existing);
  fs::resize_file(truncated, fs::file_size(good) / 3);
  expect_bad_input(touchstone("fixture validate " + truncated), truncated, "/", "truncated");

  const std::string schema = fixture_dir() + "/schema.h5";
  fs::copy_file(good, schema, fs::copy_options::overwrite_existing);
  ts::edit_attrs(schema, "/", {{"schema", "touchstone.fixture/0"}});
  Run r = touchstone("fixture validate --json " + schema);
  expect_bad_input(r, schema, "/", "expected \"touchstone.fixture/1\"");
  CHECK(nlohmann::json::parse(r.out)["ok"] == false);

  const std::string nodtype = fixture_dir() + "/nodtype.h5";
  fs::copy_file(good, nodtype, fs::copy_options::overwrite_existing);
  ts::edit_attrs(nodtype, "/attention/v", {}, {"dtype"});
  expect_bad_input(touchstone("fixture validate " + nodtype), nodtype, "/attention/v",
                   "uint16 dataset without a dtype attribute");

  // NaN in an input: exit 2, accepted with --allow-nonfinite.
  const std::string nan = fixture_dir() + "/nan.h5";
  {
    auto fx = ts::load_fixture(good);
    fx.q.data[37] = std::nan("");
    ts::write_fixture(nan, fx.meta, fx.config,
                      {{"/attention/q", fx.q, {}}, {"/attention/k", fx.k, {}}, {"/attention/v", fx.v, {}}});
  }
  expect_bad_input(touchstone("fixture validate " + nan), nan, "/attention/q", "NaN/Inf");
  CHECK(touchstone("fixture validate --allow-nonfinite " + nan).code == 0);
}

TEST_CASE("fixture synth: bad options exit 2, and nothing is written", "[cli][fixture]") {
  const std::string out = fixture_dir() + "/synth_bad.h5";
  Run r = touchstone("fixture synth --force --preset huge -o " + out);
  CHECK(r.code == 2);
  CHECK(line_count(r.err) == 1);
  CHECK(r.err.find("unknown preset 'huge'") != std::string::npos);
  r = touchstone("fixture synth --force --preset tiny --structure 1.5 -o " + out);
  CHECK(r.code == 2);
  CHECK(line_count(r.err) == 1);
  CHECK(r.err.find("--structure") != std::string::npos);
  r = touchstone("fixture synth --force --preset tiny");  // no -o
  CHECK(r.code == 2);
  CHECK(line_count(r.err) == 1);
  const std::string nodir = fixture_dir() + "/no/such/dir/f.h5";
  r = touchstone("fixture synth --force --preset tiny -o " + nodir);
  CHECK(r.code == 2);
  CHECK(line_count(r.err) == 1);
  CHECK(r.err.find(nodir) != std::string::npos);
  CHECK_FALSE(fs::exists(out));
  CHECK_FALSE(fs::exists(fixture_dir() + "/no"));
}

TEST_CASE("fixture synth --with-block writes a block fixture that validates", "[cli][fixture]") {
  const std::string f = fixture_dir() + "/tiny_block.h5";
  Run r = touchstone("fixture synth --force --preset tiny --seed 2 --with-block -o " + f);
  INFO(r.err);
  REQUIRE(r.code == 0);
  r = touchstone("fixture validate --json " + f);
  REQUIRE(r.code == 0);
  auto j = nlohmann::json::parse(r.out);
  CHECK(j["block"] == true);
  CHECK(j["observed"] == true);
  // x, modulation, modulation_row, positions, 8 weights, 14 stages
  CHECK(j["block_datasets"].size() == 26);
}

TEST_CASE("fixture validate: a malformed tile token order is refused on load, naming the file", "[cli][fixture]") {
  for (const char* order : {"tile:abc", "tile:0x1x1", "tile:1x2x2junk"}) {
    const std::string f = fixture_dir() + "/order.h5";
    REQUIRE(touchstone("fixture synth --force --preset tiny --seed 4 -o " + f).code == 0);
    ts::edit_attrs(f, "/config", {{"token_order", order}});
    const Run r = touchstone("fixture validate " + f);
    INFO("stdout: " << r.out << "\nstderr: " << r.err);
    CHECK(r.code == 2);
    CHECK(line_count(r.err) == 1);
    CHECK(r.err.find(std::string("token_order '") + order + "' is not tile:TTxTHxTW") != std::string::npos);
    CHECK(r.err.find(f) != std::string::npos);
  }
}
