// touchstone triage and fixture extract as a user runs them: text, JSON and
// HTML from one run, the repro slice, and exit 2 for bad input before work.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <regex>
#include <string>
#include <utility>
#include <vector>

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

namespace {

// (figure, green channel) of every numbered cell of the heatmap titled `title`.
std::vector<std::pair<double, int>> cells_of(const std::string& html, const std::string& title) {
  std::vector<std::pair<double, int>> out;
  const size_t from = html.find("aria-label=\"" + title + "\"");
  if (from == std::string::npos) return out;
  const std::string svg = html.substr(from, html.find("</svg>", from) - from);
  const std::regex cell(R"(fill="#[0-9a-f]{2}([0-9a-f]{2})[0-9a-f]{2}"><title>[^<]*: ([0-9.eE+-]+)</title>)");
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), cell); it != std::sregex_iterator(); ++it)
    out.emplace_back(std::stod((*it)[2]), std::stoi((*it)[1], nullptr, 16));
  return out;
}

}  // namespace

TEST_CASE("triage CLI: the page draws the candidate's and the baseline's maps on one colour scale") {
  const std::string d = ts::test::scratch_dir(), f = d + "/triage_scale.h5";
  REQUIRE(run_cli("fixture synth --force --preset tiny --seed 3 -o " + f).code == 0);
  const auto r = run_cli("triage " + f + " --candidate sol:tau=1.3 --html " + d + "/scale.html");
  INFO(r.err);
  REQUIRE(r.code == 0);
  const std::string html = ts::test::read_file(d + "/scale.html");
  for (const char* map : {"head_x_qblock", "head_x_frame"}) {
    auto cells = cells_of(html, std::string("candidate: rel_l2 ") + map);
    const auto floor = cells_of(html, std::string("baseline: rel_l2 ") + map);
    REQUIRE_FALSE(cells.empty());
    REQUIRE_FALSE(floor.empty());
    cells.insert(cells.end(), floor.begin(), floor.end());
    // One scale: a larger figure is never drawn lighter (more green) than a smaller one.
    std::sort(cells.begin(), cells.end());
    for (size_t i = 1; i < cells.size(); ++i) {
      INFO(map << ": " << cells[i - 1].first << " -> " << cells[i].first);
      CHECK(cells[i].second <= cells[i - 1].second);
    }
  }
  // The conditioning tokens' column is "cond" under the cells and in the text, never frame F or -1.
  CHECK(html.find("then the conditioning tokens (cond)") != std::string::npos);
  CHECK(html.find("text-anchor=\"middle\">cond</text>") != std::string::npos);
  CHECK(r.out.find("rel_l2_worst_frame: the conditioning tokens") != std::string::npos);
  CHECK(r.out.find("cond -1") == std::string::npos);
}
