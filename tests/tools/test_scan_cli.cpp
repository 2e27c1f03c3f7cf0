// End-to-end: touchstone scan finds the planted cliff of a plugin (correct up to 1500
// tokens, 1.5x its output above) within 1 % in at most 12 evaluations, and writes its page.
#include <nlohmann/json.hpp>

#include "catch.hpp"
#include "cli_runner.hpp"

namespace {
const std::string kCliff = "plugin:" + std::string(TOUCHSTONE_PLUGIN_DIR) + "/libtsk_cliff.so,cliff=1500";
}

TEST_CASE("scan CLI: a planted cliff located within 1 % in at most 12 evaluations", "[cli][scan]") {
  const std::string dir = ts::test::scratch_dir(), j = dir + "/scan.json", h = dir + "/scan.html";
  const auto r = ts::test::run_cli("scan --candidate " + kCliff +
                                   " --from 128 --to 2048 --heads 1 --head-dim 32 --json " + j + " --html " + h);
  INFO(r.out << r.err);
  CHECK(r.code == 1);  // a cliff is a finding
  CHECK(r.out.find("cliff between") != std::string::npos);
  const auto js = nlohmann::json::parse(ts::test::read_file(j));
  CHECK(js["schema"] == "touchstone.scan/1");
  CHECK(js["evaluations"].size() <= 12);
  const auto& c = js["cliff"];
  REQUIRE(c.is_object());
  CHECK(c["located"] == true);
  CHECK(c["below"].get<int64_t>() <= 1500);
  CHECK(c["above"].get<int64_t>() > 1500);
  CHECK(c["above"].get<int64_t>() - c["below"].get<int64_t>() <= 15);
  CHECK(c["figure_above"].get<double>() > 0.4);
  CHECK(c["figure_below"].get<double>() < 1e-5);
  const std::string page = ts::test::read_file(h);
  CHECK(page.find("<svg") != std::string::npos);
  CHECK(page.find("class=\"span\"") != std::string::npos);
}

TEST_CASE("scan CLI: a clean kernel has no cliff; bad input is exit 2 before any run", "[cli][scan]") {
  const auto ok = ts::test::run_cli("scan --candidate " + kCliff + "0 --from 64 --to 512 --heads 1 --head-dim 32");
  INFO(ok.out << ok.err);
  CHECK(ok.code == 0);
  CHECK(ok.out.find("no cliff") != std::string::npos);
  for (const std::string args : {"--candidate exact --from 500 --to 100", "--from 64 --to 512",
                                 "--candidate nope --from 64 --to 512", "--candidate exact --dim width --from 1 --to 9",
                                 "--candidate exact --from 64 --to 512 --metric ulp",
                                 "--candidate exact --worker true --from 64 --to 512"}) {
    const auto r = ts::test::run_cli("scan " + args);
    INFO(args << ": " << r.err);
    CHECK(r.code == 2);
    CHECK(r.err.find('\n') == r.err.size() - 1);
  }
}

TEST_CASE("scan CLI: a worker process is a candidate; one that fails fails its evaluations", "[cli][scan]") {
  // A worker that answers error to every shape: every evaluation failed, no figure, exit 1.
  const auto r = ts::test::run_cli(
      "scan --worker 'while read cmd path; do [ \"$cmd\" = run ] && echo \"error no kernel here\"; done' "
      "--from 64 --to 256 --heads 1 --head-dim 32 --json -");
  INFO(r.err);
  CHECK(r.code == 1);
  const auto js = nlohmann::json::parse(r.out);
  REQUIRE(js["evaluations"].size() == 4);
  for (const auto& e : js["evaluations"]) CHECK(e["error"] == "no kernel here");
  // One that dies: its exit status is the reason.
  const auto d = ts::test::run_cli("scan --worker 'exit 7' --from 64 --to 256 --heads 1 --head-dim 32 --json -");
  const auto jd = nlohmann::json::parse(d.out);
  CHECK(jd["evaluations"][0]["error"].get<std::string>().find("status 7") != std::string::npos);
}

TEST_CASE("scan CLI: where every run fails there is no trend and nothing measured", "[cli][scan]") {
  const auto r = ts::test::run_cli("scan --candidate plugin:" + std::string(TOUCHSTONE_PLUGIN_DIR) +
                       "/libtsk_bad_nan.so --from 256 --to 2048 --points 4 --json");
  INFO(r.out << r.err);
  CHECK(r.code == 1);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["slope"].is_null());
  const auto t = ts::test::run_cli("scan --candidate plugin:" + std::string(TOUCHSTONE_PLUGIN_DIR) +
                       "/libtsk_bad_nan.so --from 256 --to 2048 --points 4");
  CHECK(t.out.find("nothing measured") != std::string::npos);
  CHECK(t.out.find("no cliff: every step follows the trend") == std::string::npos);
  for (size_t a = 0, b; (b = t.out.find('\n', a)) != std::string::npos; a = b + 1) CHECK(b - a <= 100);
}
