// Every figure of compare and gate on a `ci` fixture is the one touchstone
// 07398ad computed, bit for bit (tests/tools/data/ci_seed3_figures.json): the
// metric passes may get faster, never different. Numbers are printed to
// round-trip, so equal parsed doubles are equal bits.
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "catch.hpp"
#include "cli_runner.hpp"

namespace {

std::string figures_file() { return std::string(TOUCHSTONE_SOURCE_DIR) + "/tests/tools/data/ci_seed3_figures.json"; }

// The first path where two JSON values differ ("" when equal).
std::string first_difference(const nlohmann::json& a, const nlohmann::json& b, const std::string& at = "") {
  if (a.type() != b.type()) return at + " (type)";
  if (a.is_object()) {
    for (auto it = a.begin(); it != a.end(); ++it) {
      if (!b.contains(it.key())) return at + "/" + it.key() + " (missing)";
      const std::string d = first_difference(it.value(), b[it.key()], at + "/" + it.key());
      if (!d.empty()) return d;
    }
    return a.size() == b.size() ? "" : at + " (extra keys)";
  }
  if (a.is_array()) {
    if (a.size() != b.size()) return at + " (length)";
    for (size_t i = 0; i < a.size(); ++i) {
      const std::string d = first_difference(a[i], b[i], at + "/" + std::to_string(i));
      if (!d.empty()) return d;
    }
    return "";
  }
  return a == b ? "" : at + ": " + a.dump() + " vs " + b.dump();
}

}  // namespace

TEST_CASE("compare and gate figures on ci are 07398ad's, bit for bit") {
  const nlohmann::json gold = nlohmann::json::parse(ts::test::read_file(figures_file()));
  const std::string dir = ts::test::scratch_dir() + "/figures";
  std::filesystem::create_directories(dir);
  const std::string f = dir + "/ci.h5";
  REQUIRE(ts::test::run_cli("fixture synth --force --preset ci --seed 3 -o " + f).code == 0);
  for (const char* ref : {"--backend exact", "--backend sage2 --preset sm121", "--backend sol --tau 1.3",
                          "--backend sage2 --preset sm90 round_out=0"})
    REQUIRE(ts::test::run_cli("reference " + f + " " + ref).code == 0);

  for (const auto& p : gold["pairs"]) {
    const std::string a = p[0], b = p[1];
    const auto r = ts::test::run_cli("compare " + f + " " + a + " " + b + " --breakdown --json");
    REQUIRE(r.code == 0);
    nlohmann::json got = nlohmann::json::parse(r.out);
    got.erase("fixture");
    INFO("compare " << a << " " << b);
    CHECK(first_difference(gold["compare"][a + " " + b], got) == "");
  }
  for (const char* gate : {"sage_compat", "sparse_acceptance"}) {
    const auto r = ts::test::run_cli(std::string("gate --gate ") + gate + " --fixture " + f +
                                     " --baseline stored:sage2_sm121 --candidate stored:sol_tau1.3_bf16"
                                     " --candidate stored:sage2_sm90_round_out-off --json");
    REQUIRE((r.code == 0 || r.code == 1));
    const nlohmann::json j = nlohmann::json::parse(r.out);
    REQUIRE(j["candidates"].size() == gold["gate"][gate].size());
    for (size_t i = 0; i < j["candidates"].size(); ++i) {
      const nlohmann::json& c = j["candidates"][i];
      for (const char* k : {"rules", "verdict"}) {
        INFO(gate << " candidate " << i << " " << k);
        CHECK(first_difference(gold["gate"][gate][i][k], c[k]) == "");
      }
      for (const char* k : {"vs_baseline", "vs_exact", "worst_vs_baseline", "worst_vs_exact"}) {
        INFO(gate << " candidate " << i << " " << k);
        CHECK(first_difference(gold["gate"][gate][i][k], c["details"][k]) == "");
      }
    }
  }
}
