// Where every backend of a fixture converts q, k, v its own way (sol, sage2, exact_cuda, their
// mirrors) or reads a stored output, the commands read the inputs as stored, with no float64
// copy; the reports are the same to the bit as from float64 values (TOUCHSTONE_ISOLATED_READS=0
// reads values).
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>

#include "catch.hpp"
#include "cli_runner.hpp"
#include "json_difference.hpp"

namespace {

using Result = ts::test::CliResult;
Result cli(const std::string& args) { return ts::test::run_cli(args); }

// Timing and paths aside, the report as JSON.
nlohmann::json figures(const Result& r) {
  INFO(r.err);
  REQUIRE((r.code == 0 || r.code == 1));
  nlohmann::json j = nlohmann::json::parse(r.out);
  std::function<void(nlohmann::json&)> strip = [&](nlohmann::json& x) {
    if (x.is_object()) {
      for (auto it = x.begin(); it != x.end();) {
        const std::string& k = it.key();
        if (k == "ms" || k == "threads" || k == "wall" || (k.size() > 3 && k.compare(k.size() - 3, 3, "_ms") == 0)) {
          it = x.erase(it);
          continue;
        }
        strip(it.value());
        ++it;
      }
      // A gate table's column of wall times: no two runs share it.
      if (x.contains("columns") && x["columns"].is_array() && x.contains("candidates"))
        for (size_t c = 0; c < x["columns"].size(); ++c)
          if (x["columns"][c].is_string() && x["columns"][c].get<std::string>().find(" ms") != std::string::npos)
            for (auto& cand : x["candidates"])
              if (cand.contains("shown") && c < cand["shown"].size()) cand["shown"][c] = "-";
    } else if (x.is_array()) {
      for (auto& e : x) strip(e);
    }
  };
  strip(j);
  return j;
}

// The same command with the inputs as stored (the default) and as float64 values.
void same_either_way(const std::string& args) {
  ::setenv("TOUCHSTONE_PHASES", "1", 1);
  const Result stored = cli(args + " --json");
  ::setenv("TOUCHSTONE_ISOLATED_READS", "0", 1);
  const Result values = cli(args + " --json");
  ::unsetenv("TOUCHSTONE_ISOLATED_READS");
  ::unsetenv("TOUCHSTONE_PHASES");
  INFO(args);
  // The stored path's own phase: NaN looked for on the stored bits, no conversion to float64.
  CHECK(stored.err.find("finite /attention/q") != std::string::npos);
  CHECK(stored.err.find("as float64 /attention/q") == std::string::npos);
  CHECK(values.err.find("finite /attention/q") == std::string::npos);
  CHECK(ts::test::first_difference(figures(values), figures(stored)) == "");
}

}  // namespace

TEST_CASE("stored inputs: gate and sweep of computed sol and sage2 give the reports float64 inputs give") {
  const std::string f = ts::test::scratch_dir() + "/stored-inputs.h5";
  REQUIRE(cli("fixture synth --force --preset ci --seed 11 -o " + f).code == 0);
  REQUIRE(cli("reference " + f + " --backend exact").code == 0);  // a stored exact: every side reads stored
  same_either_way("gate --gate sparse_acceptance --fixture " + f +
                  " --baseline sage2 --candidate sol:tau=1.3 --candidate sol:tau=0.5,precision=int8_qk");
  same_either_way("sweep " + f + " --backend sol --tau 1,2 --baseline sage2:preset=sm90 --gate sage_compat");
}

TEST_CASE("stored inputs: a host exact reference to compute keeps the float64 inputs") {
  const std::string f = ts::test::scratch_dir() + "/values-inputs.h5";
  REQUIRE(cli("fixture synth --force --preset tiny --seed 12 -o " + f).code == 0);
  ::setenv("TOUCHSTONE_PHASES", "1", 1);
  const Result r = cli("gate --gate sage_compat --fixture " + f + " --baseline sage2 --candidate sol --json");
  ::unsetenv("TOUCHSTONE_PHASES");
  INFO(r.err);
  CHECK((r.code == 0 || r.code == 1));
  CHECK(r.err.find("finite /attention/q") == std::string::npos);
  CHECK(r.err.find("as float64 /attention/q") != std::string::npos);
}
