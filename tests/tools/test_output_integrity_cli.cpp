// Outputs carry their content digest and the identity of the inputs they
// were computed from: a flipped byte in a stored output, or an output copied
// in from another fixture, is exit 2 with one line naming it wherever it is
// read (compare, gate, validate --outputs); inspect shows both; an output
// written before outputs recorded their inputs gets a note.
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "catch.hpp"
#include "cli_runner.hpp"
#include "fixtures/byte_flip.hpp"
#include "fixtures/fixture.hpp"
#include "fixtures/identity.hpp"

using ts::test::run_cli;

namespace {

int lines(const std::string& s) {
  int n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

std::string fresh(const std::string& name, int seed) {
  const std::string f = ts::test::scratch_dir() + "/" + name + ".h5";
  std::filesystem::remove(f);
  std::filesystem::remove_all(f + ".outputs");
  REQUIRE(run_cli("fixture synth --preset tiny --seed " + std::to_string(seed) + " -o " + f).code == 0);
  REQUIRE(run_cli("reference " + f + " --backend exact").code == 0);
  REQUIRE(run_cli("reference " + f + " --backend sage2").code == 0);
  return f;
}

std::string sage2_name(const std::string& f) {
  for (const auto& n : ts::list_group(f, "/outputs"))
    if (n.rfind("sage2", 0) == 0) return n;
  FAIL("no sage2 output in " << f);
  return "";
}

// Flips one bit of output `ds`'s stored elements in its side file (found by
// their first 64 bytes, as tests/fixtures/byte_flip.hpp finds an input's).
void flip_in_side_file(const std::string& fixture, const std::string& ds, const std::string& side) {
  const std::vector<unsigned char> needle = fxtest::stored_bytes(ts::read_tensor(fixture, ds), 64);
  std::string bytes;
  {
    std::ifstream in(side, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  const size_t pos = bytes.find(std::string(needle.begin(), needle.end()));
  REQUIRE(pos != std::string::npos);
  std::fstream io(side, std::ios::binary | std::ios::in | std::ios::out);
  io.seekp(static_cast<std::streamoff>(pos + 9));
  const char c = static_cast<char>(bytes[pos + 9] ^ 0x10);
  io.write(&c, 1);
}

void expect_one_line(const ts::test::CliResult& r, const std::string& what) {
  INFO("stdout: " << r.out << "\nstderr: " << r.err);
  CHECK(r.code == 2);
  CHECK(lines(r.err) == 1);
  CHECK(r.err.find(what) != std::string::npos);
}

}  // namespace

TEST_CASE("a flipped byte in a stored output: compare, gate and validate --outputs exit 2 naming it", "[cli][integrity]") {
  const std::string f = fresh("out_flip", 2);
  const std::string name = sage2_name(f);
  const std::string ds = "/outputs/" + name + "/attention";
  REQUIRE(run_cli("compare " + f + " " + name + " exact").code == 0);
  REQUIRE(run_cli("fixture validate " + f + " --outputs").code == 0);
  flip_in_side_file(f, ds, f + ".outputs/" + name + ".h5");
  const std::string said = ds + ": content does not match its digest";
  expect_one_line(run_cli("compare " + f + " " + name + " exact"), said);
  expect_one_line(run_cli("compare " + f + " exact " + name + " --breakdown"), said);
  expect_one_line(run_cli("gate --gate sage_compat --fixture " + f + " --candidate stored:" + name +
                          " --baseline stored:" + name + " --accuracy-only"),
                  said);
  expect_one_line(run_cli("fixture validate " + f + " --outputs"), said);
  // Without --outputs the content is not read: the readers above are what catch it.
  CHECK(run_cli("fixture validate " + f).code == 0);
  const auto ins = run_cli("fixture inspect " + f);
  CHECK(ins.code == 0);
  CHECK(ins.out.find("DIGEST MISMATCH") != std::string::npos);
}

TEST_CASE("an output copied from another fixture is refused, naming both identities", "[cli][integrity]") {
  const std::string a = fresh("out_from_a", 2);
  const std::string b = ts::test::scratch_dir() + "/out_into_b.h5";
  std::filesystem::remove(b);
  std::filesystem::remove_all(b + ".outputs");
  REQUIRE(run_cli("fixture synth --preset tiny --seed 3 -o " + b).code == 0);
  std::filesystem::create_directory(b + ".outputs");
  std::filesystem::copy_file(a + ".outputs/exact.h5", b + ".outputs/exact.h5");
  const std::string ida = ts::fixture_identity(a).identity, idb = ts::fixture_identity(b).identity;
  REQUIRE(ida != idb);
  for (const auto& cmd : {"compare " + b + " exact exact",
                          "gate --gate sage_compat --fixture " + b + " --candidate stored:exact --accuracy-only",
                          "fixture validate " + b}) {
    INFO(cmd);
    const auto r = run_cli(cmd);
    expect_one_line(r, "/outputs/exact/attention: computed from other inputs");
    CHECK(r.err.find(ida.substr(0, 19)) != std::string::npos);
    CHECK(r.err.find(idb.substr(0, 19)) != std::string::npos);
  }
  const auto ins = run_cli("fixture inspect " + b);
  CHECK(ins.code == 0);
  CHECK(ins.out.find("COMPUTED FROM OTHER INPUTS") != std::string::npos);
  // The fixture's own outputs say they are its own.
  const auto own = run_cli("fixture inspect " + a);
  CHECK(own.out.find("computed from these inputs") != std::string::npos);
  CHECK(own.out.find("OTHER INPUTS") == std::string::npos);
}

TEST_CASE("an output that records no inputs is read, with a note from validate", "[cli][integrity]") {
  const std::string f = fresh("out_legacy", 4);
  ts::edit_attrs(f + ".outputs/exact.h5", "/outputs/exact/attention", nlohmann::json::object(),
                 {ts::kInputsAttr});
  const auto v = run_cli("fixture validate " + f);
  INFO(v.out << v.err);
  CHECK(v.code == 0);
  CHECK(v.out.find("note: 1 output records no inputs") != std::string::npos);
  CHECK(v.out.find(": exact;") != std::string::npos);
  CHECK(run_cli("compare " + f + " " + sage2_name(f) + " exact").code == 0);
  CHECK(run_cli("fixture inspect " + f).out.find("inputs unrecorded") != std::string::npos);
}
