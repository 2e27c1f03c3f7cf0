// End to end: `touchstone reference --dump` stores the intermediates, each
// quantised one naming its scale dataset (fixture-schema.md), and `compare`
// reads them back with identical_fraction.
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "catch.hpp"
#include "cli_runner.hpp"
#include "fixtures/fixture.hpp"

TEST_CASE("reference --dump: intermediates with their scale datasets, comparable by compare") {
  std::filesystem::create_directories(ts::test::scratch_dir());
  const std::string f = ts::test::scratch_dir() + "/dump.h5";
  REQUIRE(ts::test::run_cli("fixture synth --force --preset tiny --seed 4 -o " + f).code == 0);
  const auto r = ts::test::run_cli("reference " + f + " --backend sage2 --preset sm90 --dump --json");
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j.at("intermediates").size() == 8);
  const std::string g = "/outputs/sage2_sm90/intermediates/";
  for (const char* key : {"q_int8", "k_int8", "v_fp8"}) {
    const auto a = ts::read_attrs(f, g + key);
    const std::string stem = std::string(key).substr(0, 1);
    CHECK(a.at("scale") == g + stem + "_scale");
    CHECK(ts::has_dataset(f, a.at("scale").get<std::string>()));
    CHECK(a.at("codes") == (stem == "v" ? "float8_e4m3fn" : "int8"));
  }
  CHECK_FALSE(ts::read_attrs(f, g + "q_scale").contains("scale"));
  // The same codes against themselves, and against another preset's (other groups).
  const auto same = ts::test::run_cli("compare " + f + " " + g + "q_int8 " + g + "q_int8 --json");
  REQUIRE(same.code == 0);
  CHECK(nlohmann::json::parse(same.out).at("metrics").at("identical_fraction") == 1.0);
  REQUIRE(ts::test::run_cli("reference " + f + " --backend sage2 --preset sm121 --dump").code == 0);
  const auto other = ts::test::run_cli("compare " + f + " " + g + "v_fp8 /outputs/sage2_sm121/intermediates/v_fp8 --json");
  REQUIRE(other.code == 0);
  // scale_max 448 against 2.25: the FP8 codes of V differ almost everywhere.
  CHECK(nlohmann::json::parse(other.out).at("metrics").at("identical_fraction").get<double>() < 0.5);
}

TEST_CASE("reference: a flag of the other mode, a stored backend, --recipe without nvfp4 are refused") {
  std::filesystem::create_directories(ts::test::scratch_dir());
  const std::string f = ts::test::scratch_dir() + "/modes.h5";
  REQUIRE(ts::test::run_cli("fixture synth --force --preset tiny --with-block --seed 4 -o " + f).code == 0);
  REQUIRE(ts::test::run_cli("reference " + f + " --backend exact").code == 0);
  const std::string exact_file = f + ".outputs/exact.h5";
  const std::string before = ts::test::read_file(exact_file);
  auto refused = [](const std::string& args, const std::string& says) {
    const auto r = ts::test::run_cli(args);
    INFO(args << "\n" << r.err);
    CHECK(r.code == 2);
    CHECK(r.err.find(says) != std::string::npos);
  };
  // Reading a stored output and storing it again rewrote it as the stored reader's.
  refused("reference " + f + " --backend stored:exact", "--backend stored:exact: a stored output is read where it is");
  CHECK(ts::test::read_file(exact_file) == before);
  refused("reference " + f + " --block --backend sage2", "--backend: with --block, the block's attention is --attention");
  refused("reference " + f + " --block --tau 1.3", "--tau: with --block");
  refused("reference " + f + " --block --recipe modelopt", "--recipe modelopt: the NVFP4 recipe applies to --linear nvfp4 only");
  refused("reference " + f + " --linear nvfp4", "--linear applies to --block");
  refused("reference " + f + " --backend sage2 --attention sol", "--attention applies to --block");
  CHECK(ts::test::run_cli("reference " + f + " --block --linear nvfp4 --recipe modelopt --attention sage2").code == 0);
}
