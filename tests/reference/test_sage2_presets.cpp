// The sage2 presets are one table (reference/sage2_presets.cpp): the factory,
// the help texts, error messages and default baselines read it. A second list
// of preset names anywhere in the C++ sources (tests and docs aside) is a copy
// that can drift, so this test greps for one.
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "catch.hpp"
#include "core/error.hpp"
#include "reference/attention_sage2.hpp"
#include "reference/sage2_presets.hpp"

namespace fs = std::filesystem;
using namespace ts;

namespace {

const fs::path kTable = fs::path("reference") / "sage2_presets.cpp";

bool is_cpp(const fs::path& p) {
  static const std::set<std::string> ext = {".cpp", ".hpp", ".h", ".cc", ".cu", ".cuh", ".inc"};
  return ext.count(p.extension().string()) != 0;
}

// Directories that are not the project's C++ sources.
bool skipped_dir(const fs::path& rel) {
  const std::string first = rel.begin()->string();
  return first == "tests" || first == "docs" || first == "shared" || first.rfind("build", 0) == 0 ||
         first.rfind('.', 0) == 0;
}

struct Hit {
  std::string where, line;
};

// Every line of a C++ source that names a preset (any `sm` + 2-3 digits, so
// a preset that is not in the table yet counts too), outside the table's
// begin/end markers in reference/sage2_presets.cpp.
std::vector<Hit> preset_names_outside_table(const fs::path& root, int* table_hits) {
  static const std::regex name(R"(\bsm_?[0-9]{2,3}[a-z]?\b)", std::regex::icase);
  std::vector<Hit> hits;
  *table_hits = 0;
  for (auto it = fs::recursive_directory_iterator(root); it != fs::recursive_directory_iterator(); ++it) {
    const fs::path rel = fs::relative(it->path(), root);
    if (it->is_directory()) {
      if (skipped_dir(rel)) it.disable_recursion_pending();
      continue;
    }
    if (!it->is_regular_file() || !is_cpp(rel) || skipped_dir(rel)) continue;
    std::ifstream in(it->path());
    std::string line;
    bool in_table = false;
    for (int n = 1; std::getline(in, line); ++n) {
      const bool table_file = rel == kTable;
      if (table_file && line.find("sage2 presets table: begin") != std::string::npos) in_table = true;
      if (table_file && line.find("sage2 presets table: end") != std::string::npos) in_table = false;
      if (!std::regex_search(line, name)) continue;
      if (in_table) {
        ++*table_hits;
        continue;
      }
      hits.push_back({rel.string() + ":" + std::to_string(n), line});
    }
  }
  return hits;
}

}  // namespace

TEST_CASE("sage2 preset names appear in the C++ sources only in the one table") {
  const fs::path root = TOUCHSTONE_SOURCE_DIR;
  REQUIRE(fs::exists(root / kTable));
  int table_hits = 0;
  const auto hits = preset_names_outside_table(root, &table_hits);
  for (const auto& h : hits) UNSCOPED_INFO("preset name outside the table: " << h.where << ": " << h.line);
  CHECK(hits.empty());
  // The grep sees the table itself: one line per preset.
  CHECK(table_hits == static_cast<int>(sage2_presets().size()));
}

TEST_CASE("the sage2 preset table drives the factory, its errors and its defaults") {
  const auto& presets = sage2_presets();
  REQUIRE(presets.size() >= 2);
  CHECK(&sage2_default_preset() == &presets.front());
  CHECK(sage2_default_spec() == std::string("sage2:preset=") + presets.front().name);
  std::set<std::string> names;
  for (const auto& p : presets) {
    INFO(p.name);
    CHECK(names.insert(p.name).second);
    CHECK(p.config.preset == p.name);
    CHECK(std::string(p.kernel).size() > 0);
    // The factory gives the table's configuration, named after the preset.
    BackendParams bp = BackendParams::parse(std::string("sage2:preset=") + p.name);
    std::string out_name;
    const Sage2Config c = sage2_config_from(bp, &out_name);
    CHECK(out_name == std::string("sage2_") + p.name);
    CHECK(sage2_params(c) == sage2_params(p.config));
    CHECK(sage2_params(sage2_preset(p.name)) == sage2_params(p.config));
  }
  // No preset given: the default one.
  BackendParams bare = BackendParams::parse("sage2");
  std::string bare_name;
  CHECK(sage2_params(sage2_config_from(bare, &bare_name)) == sage2_params(presets.front().config));

  // An unknown preset is refused with every known name listed.
  try {
    BackendParams bad = BackendParams::parse("sage2:preset=nope");
    sage2_config_from(bad, nullptr);
    FAIL("no error for an unknown preset");
  } catch (const InputError& e) {
    for (const auto& p : presets) CHECK(std::string(e.what()).find(p.name) != std::string::npos);
  }
  CHECK_THROWS_AS(sage2_preset("nope"), InputError);
  CHECK(sage2_preset_names("|").find('|') != std::string::npos);
}

#include "python_code_lines.hpp"

TEST_CASE("sage2 preset names appear in the Python package's code nowhere (it reads the table)") {
  // Python names kernels after presets (sageattn_sm90), so a name may follow an underscore.
  static const std::regex name(R"((\b|_)sm_?[0-9]{2,3}[a-z]?\b)", std::regex::icase);
  std::istringstream planted(
      "\"\"\"sm90 in prose\"\"\"\nPRESETS = {\"sageattn_sm121\": 1}  # sm89\nP = (\"sm90\",)\nK = f\"sageattn_{p}\"\n");
  int planted_hits = 0;
  for (const auto& l : ts_test::python_code_lines(planted, "planted.py")) planted_hits += std::regex_search(l.text, name);
  CHECK(planted_hits == 2);  // the two code lines, not the docstring, the comment or the f-string

  int files = 0;
  std::vector<std::string> hits;
  for (const auto& l : ts_test::python_package_code_lines(TOUCHSTONE_SOURCE_DIR, &files))
    if (std::regex_search(l.text, name)) hits.push_back(l.where + ": " + l.text);
  CHECK(files >= 10);
  for (const auto& h : hits) UNSCOPED_INFO("preset name in Python code: " << h);
  CHECK(hits.empty());
}
