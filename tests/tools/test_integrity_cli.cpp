// Fixture integrity end to end: one flipped bit in a sealed fixture's q, k, v or a
// block tensor makes `fixture validate`, `reference` and `gate` exit 2 with
// one line naming the dataset, before any work; `fixture inspect` shows the
// identity and `fixture seal` seals a fixture written before digests.
#include <filesystem>
#include <nlohmann/json.hpp>
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

void expect_refused(const ts::test::CliResult& r, const std::string& f, const std::string& ds) {
  INFO("stdout: " << r.out << "\nstderr: " << r.err);
  CHECK(r.code == 2);
  CHECK(lines(r.err) == 1);
  CHECK(r.err.find(f + ": " + ds + ": content does not match its digest") != std::string::npos);
}

}  // namespace

TEST_CASE("a flipped bit in a sealed fixture: validate, reference and gate exit 2 naming it", "[cli][integrity]") {
  for (const std::string ds : {"/attention/q", "/attention/k", "/attention/v", "/block/x",
                               "/block/weights/w_out"}) {
    const bool block = ds.rfind("/block/", 0) == 0;
    const std::string f = ts::test::scratch_dir() + "/flip" + std::to_string(std::hash<std::string>{}(ds) % 1000) + ".h5";
    std::filesystem::remove(f);
    REQUIRE(run_cli("fixture synth --preset tiny --seed 2 " + std::string(block ? "--with-block " : "") + "-o " + f).code == 0);
    REQUIRE(run_cli("fixture validate " + f).code == 0);
    fxtest::flip_stored_byte(f, ds);
    INFO(ds);
    expect_refused(run_cli("fixture validate " + f), f, ds);
    expect_refused(run_cli("reference " + f + " --backend exact"), f, ds);
    expect_refused(run_cli("gate --gate sage_compat --fixture " + f + " --candidate exact --pairs 2 --warmup 0"), f, ds);
    CHECK(ts::list_group(f, "/outputs").empty());  // refused before any work
    const auto ins = run_cli("fixture inspect " + f);
    CHECK(ins.code == 0);
    CHECK(ins.out.find("DIGEST MISMATCH") != std::string::npos);
  }
}

TEST_CASE("fixture inspect prints the identity; seal seals an old fixture", "[cli][integrity]") {
  const std::string f = ts::test::scratch_dir() + "/seal_cli.h5";
  std::filesystem::remove(f);
  REQUIRE(run_cli("fixture synth --preset tiny --seed 4 -o " + f).code == 0);
  const std::string id = ts::fixture_identity(f).identity;
  auto ins = run_cli("fixture inspect " + f);
  CHECK(ins.out.find("identity " + id + " (sealed)") != std::string::npos);
  for (const auto& d : ts::fixture_identity(f).digests) ts::edit_attrs(f, d.first, {}, {"digest"});
  auto v = run_cli("fixture validate " + f);
  CHECK(v.code == 0);
  CHECK(v.out.find("NOT sealed") != std::string::npos);
  auto r = run_cli("reference " + f + " --backend exact");
  CHECK(r.code == 0);
  CHECK(r.err.find("is not sealed") != std::string::npos);
  auto s = run_cli("fixture seal " + f + " --json");
  INFO(s.err);
  REQUIRE(s.code == 0);
  const auto j = nlohmann::json::parse(s.out);
  CHECK(j["sealed"] == true);
  CHECK(j["identity"] == id);
  CHECK(run_cli("fixture validate " + f).out.find("sealed, content verified") != std::string::npos);
  // Outputs survive sealing (they live beside the inputs).
  CHECK(ts::list_group(f, "/outputs") == std::vector<std::string>{"exact"});
  auto m = run_cli("fixture migrate " + f);
  CHECK(m.code == 0);
  CHECK(m.out.find("nothing to move") != std::string::npos);
}
