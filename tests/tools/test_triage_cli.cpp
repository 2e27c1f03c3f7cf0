// touchstone triage and fixture extract as a user runs them: text, JSON and
// HTML from one run, the repro slice, and exit 2 for bad input before work.
#include <nlohmann/json.hpp>

#include "catch.hpp"
#include "cli_runner.hpp"

using ts::test::run_cli;

TEST_CASE("triage CLI: text, --json and a self-contained --html page on a tiny fixture") {
  const std::string d = ts::test::scratch_dir(), f = d + "/triage_tiny.h5";
  REQUIRE(run_cli("fixture synth --force --preset tiny --seed 2 -o " + f).code == 0);
  const auto r = run_cli("triage " + f + " --candidate sol:tau=1.3 --json " + d + "/t.json --html " + d + "/t.html");
  INFO(r.err);
  REQUIRE(r.code == 0);
  CHECK(r.out.find("worst elements by |candidate - exact|") != std::string::npos);
  CHECK(r.out.find("routing (unrouted blocks dropped)") != std::string::npos);
  CHECK(r.out.find("repro: touchstone triage") != std::string::npos);
  const auto j = nlohmann::json::parse(ts::test::read_file(d + "/t.json"));
  CHECK(j["schema"] == "touchstone.triage/1");
  const std::string html = ts::test::read_file(d + "/t.html");
  CHECK(html.find("<svg") != std::string::npos);
  CHECK(html.find("<script") == std::string::npos);
  CHECK(html.find("class=\"cell\"") != std::string::npos);

  // The slice triage proposes is a valid fixture.
  const std::string heads = j["repro"]["slice"]["heads"], tokens = j["repro"]["slice"]["tokens"];
  const auto e = run_cli("fixture extract " + f + " --heads " + heads + " --tokens " + tokens +
                         " --with sol:tau=1.3 -o " + d + "/small.h5 --force");
  INFO(e.err);
  REQUIRE(e.code == 0);
  CHECK(run_cli("fixture validate " + d + "/small.h5").code == 0);
}

TEST_CASE("triage CLI: bad input exits 2 with one line, before any work") {
  const std::string d = ts::test::scratch_dir(), f = d + "/triage_bad.h5";
  REQUIRE(run_cli("fixture synth --force --preset tiny --seed 2 -o " + f).code == 0);
  auto r = run_cli("triage " + f + " --candidate stored:nope");
  CHECK(r.code == 2);
  CHECK(r.err.find("nope") != std::string::npos);
  r = run_cli("triage " + d + "/missing.h5 --candidate exact");
  CHECK(r.code == 2);
  r = run_cli("triage " + f);  // --candidate is required
  CHECK(r.code == 2);
  r = run_cli("fixture extract " + f + " --tokens 3:1 -o " + d + "/x.h5");
  CHECK(r.code == 2);
  r = run_cli("fixture extract " + f + " --heads 0 -o " + f);  // exists, no --force: nothing lost
  CHECK(r.code == 2);
  CHECK(run_cli("fixture validate " + f).code == 0);
}
