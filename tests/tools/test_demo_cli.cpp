// `touchstone demo`, the README's command 1, as a new user reads it:
// no emulation is shown faster or slower than another, the sol gate is decided
// by accuracy, and the real kernels' section says why its speed is or is not judged.
#include <filesystem>
#include <sstream>
#include <string>

#include "catch.hpp"
#include "cli_runner.hpp"
#include "text_lines.hpp"

namespace {

using ts::test::lines_of;

bool starts_with(const std::string& s, const std::string& p) { return s.compare(0, p.size(), p) == 0; }

}  // namespace

TEST_CASE("demo: emulations are judged on accuracy only; no speed verdict comes from their times") {
  const ts::test::CliResult r = ts::test::run_cli("demo");
  INFO(r.out << r.err);
  REQUIRE(r.code == 0);
  const auto out = lines_of(r.out);
  const size_t real = r.out.find("\n3. ");
  REQUIRE(real != std::string::npos);
  const std::string emulations = r.out.substr(0, real);
  // Section 2 judges emulations: every speed rule is missing, for that reason.
  CHECK(emulations.find("emulation, whose") != std::string::npos);
  for (const auto& l : lines_of(emulations)) {
    INFO(l);
    CHECK_FALSE(starts_with(l, "ACCEPT "));
    if (l.find("faster: speedup") != std::string::npos) CHECK(l.find("missing") != std::string::npos);
    CHECK(l.find("slower") == std::string::npos);
  }
  // The sparse candidate far from Sage is REJECTed on accuracy, the dense one
  // (Sage-like) is INCONCLUSIVE: never ACCEPTed as faster on a CPU's time.
  CHECK(emulations.find("REJECT sol:tau=1.3\n") != std::string::npos);
  CHECK(emulations.find("INCONCLUSIVE sol:tau=-100\n") != std::string::npos);
  // The real kernels: either judged on one timing run, or the reason it cannot be.
  const std::string kernels = r.out.substr(real);
  const bool interleaved = kernels.find("real_kernels_ci.h5") != std::string::npos;
  if (!interleaved) {
    CHECK(kernels.find("different timing runs") != std::string::npos);
    CHECK(kernels.find("scripts/capture-real-kernels-interleaved") != std::string::npos);
  } else {
    // One timing run: every speed rule is judged on the device's clock.
    CHECK(kernels.find("speed decided on the device_events clock") != std::string::npos);
    CHECK(kernels.find("missing") == std::string::npos);
  }
  // Not on a terminal: nothing wider than 100 columns, and nothing on stderr
  // (the committed fixture is sealed: no note about its digests).
  for (const auto& l : out) {
    INFO(l);
    CHECK(l.size() <= 100);
  }
  CHECK(r.err.empty());
}

TEST_CASE("demo: its import-report hint names a report that exists from the checkout's root") {
  const ts::test::CliResult r = ts::test::run_cli("demo");
  REQUIRE(r.code == 0);
  const size_t hint = r.out.find("touchstone import-report ");
  REQUIRE(hint != std::string::npos);
  std::istringstream words(r.out.substr(hint, r.out.find('\n', hint) - hint));
  std::string word, report;
  words >> word >> word >> report;
  INFO(report);
  // Run as printed from the root, the measurements written to the scratch folder.
  const std::string m = ts::test::scratch_dir() + "/demo_hint_measurements.json";
  const std::filesystem::path old = std::filesystem::current_path();
  std::filesystem::current_path(TOUCHSTONE_SOURCE_DIR);
  const ts::test::CliResult imported = ts::test::run_cli("import-report " + report + " -o " + m);
  std::filesystem::current_path(old);
  INFO(imported.out << imported.err);
  CHECK(imported.code == 0);
  const ts::test::CliResult judged = ts::test::run_cli("gate --measurements " + m);
  INFO(judged.out << judged.err);
  CHECK((judged.code == 0 || judged.code == 1));
}
