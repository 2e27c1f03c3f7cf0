// The block's stages are listed once (core/block_stage_table.cpp): a second
// list anywhere in the C++ sources fails here.
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "catch.hpp"
#include "core/block_stage_table.hpp"
#include "core/error.hpp"

namespace fs = std::filesystem;

namespace {

bool is_source(const fs::path& p) {
  const auto e = p.extension().string();
  return e == ".cpp" || e == ".hpp" || e == ".cu" || e == ".cuh" || e == ".h";
}

// Tests and docs aside; build folders are not sources.
bool skipped(const fs::path& rel) {
  const std::string top = rel.begin()->string();
  return top == "tests" || top == "docs" || top.rfind("build", 0) == 0 || top[0] == '.';
}

}  // namespace

TEST_CASE("stage table: names, order, shapes and inputs are consistent") {
  const auto& t = ts::block_stage_table();
  REQUIRE(t.size() == 14);
  std::set<std::string> seen;
  for (size_t i = 0; i < t.size(); ++i) {
    INFO(t[i].name);
    CHECK(static_cast<size_t>(t[i].id) == i);
    CHECK(seen.insert(t[i].name).second);
    for (auto in : t[i].inputs) CHECK(static_cast<size_t>(in) < i);  // a stage reads earlier stages only
    CHECK(t[i].floor > 0);
  }
  ts::BlockConfig c;
  c.hidden = 64;
  c.heads = 2;
  c.head_dim = 32;
  c.ffn_hidden = 96;
  c.segments = {{"video", true, 0, 10}};
  CHECK(ts::stage_shape(ts::block_stage(ts::BlockStage::qkv), c) == std::vector<int64_t>{10, 3, 2, 32});
  CHECK(ts::stage_shape(ts::block_stage(ts::BlockStage::fc1), c) == std::vector<int64_t>{10, 192});
  CHECK(ts::find_block_stage("residual1")->elementwise);
  CHECK(ts::find_block_stage("no_such_stage") == nullptr);
}

TEST_CASE("stage table: no second list of stage names in the C++ sources") {
  const fs::path root = TOUCHSTONE_SOURCE_DIR;
  const fs::path table = root / "core" / "block_stage_table.cpp";
  // "attention" and "output" also name the attention tensor and a fixture's
  // outputs, so alone they are not a list; every other name is one of a kind.
  std::set<std::string> distinctive, all;
  for (const auto& s : ts::block_stage_table()) {
    all.insert(s.name);
    if (std::string(s.name) != "attention" && std::string(s.name) != "output") distinctive.insert(s.name);
  }
  const std::regex quoted("\"([a-z0-9_]+)\"");
  std::vector<std::string> offences;
  int files = 0;
  for (auto it = fs::recursive_directory_iterator(root); it != fs::recursive_directory_iterator(); ++it) {
    const fs::path rel = fs::relative(it->path(), root);
    if (it->is_directory() && skipped(rel)) {
      it.disable_recursion_pending();
      continue;
    }
    if (!it->is_regular_file() || !is_source(it->path()) || it->path() == table) continue;
    ++files;
    std::ifstream in(it->path());
    std::string line;
    for (int n = 1; std::getline(in, line); ++n) {
      const auto first = line.find_first_not_of(" \t");
      if (first != std::string::npos && line.compare(first, 2, "//") == 0) continue;  // prose, not a list
      int names = 0;
      for (std::sregex_iterator m(line.begin(), line.end(), quoted), end; m != end; ++m) {
        const std::string w = (*m)[1];
        if (distinctive.count(w)) offences.push_back(rel.string() + ":" + std::to_string(n) + ": \"" + w + "\"");
        names += all.count(w) ? 1 : 0;
      }
      if (names >= 2) offences.push_back(rel.string() + ":" + std::to_string(n) + ": a list of stage names");
    }
  }
  CHECK(files > 50);  // the walk found the sources
  for (const auto& o : offences) UNSCOPED_INFO(o);
  CHECK(offences.empty());
}

TEST_CASE("size preset table: no second list of preset names in the C++ sources") {
  // core/block_config.cpp holds the one table (size_presets()); help texts and
  // messages read it through preset_names_text().
  const fs::path root = TOUCHSTONE_SOURCE_DIR;
  std::set<std::string> names;
  for (const auto& n : ts::preset_names()) names.insert(n);
  CHECK(names.size() == 4);
  CHECK(ts::preset_names_text(" | ") == "tiny | ci | medium | block24");
  const std::regex word("\"(tiny|ci|medium|block24)\"");
  std::vector<std::string> offences;
  for (const char* dir : {"core", "reference", "fixtures", "kernels_under_test", "gates", "drivers", "tools"})
    for (const auto& e : fs::recursive_directory_iterator(root / dir)) {
      if (!e.is_regular_file() || !is_source(e.path()) || e.path() == root / "core" / "block_config.cpp") continue;
      std::ifstream in(e.path());
      std::string line;
      for (int n = 1; std::getline(in, line); ++n) {
        const auto first = line.find_first_not_of(" \t");
        if (first != std::string::npos && line.compare(first, 2, "//") == 0) continue;
        int found = 0;
        for (std::sregex_iterator m(line.begin(), line.end(), word), end; m != end; ++m) ++found;
        if (found >= 2) offences.push_back(fs::relative(e.path(), root).string() + ":" + std::to_string(n));
      }
    }
  for (const auto& o : offences) UNSCOPED_INFO(o);
  CHECK(offences.empty());
}

#include "python_code_lines.hpp"

namespace {

// Offences of Python code lines: a line naming four or more stages (a list or a table of
// shapes), or one of the /config rules' phrases (a second validation).
std::vector<std::string> python_stage_copies(const std::vector<ts_test::CodeLine>& lines) {
  std::set<std::string> names;
  for (const auto& s : ts::block_stage_table()) names.insert(s.name);
  static const std::regex quoted("[\"']([a-z0-9_]+)[\"']");
  static const std::vector<std::string> rule_phrases = {"must be even", "multiple of 6", "must be > 0",
                                                        "no gap, no overlap", "video|cond"};
  std::vector<std::string> offences;
  for (const auto& l : lines) {
    std::set<std::string> seen;
    for (std::sregex_iterator m(l.text.begin(), l.text.end(), quoted), end; m != end; ++m)
      if (names.count((*m)[1])) seen.insert((*m)[1]);
    if (seen.size() >= 4) offences.push_back(l.where + ": a list of stage names");
    static const std::regex shape_entry("[\"']([a-z0-9_]+)[\"']\\s*:\\s*\\(");
    for (std::sregex_iterator m(l.text.begin(), l.text.end(), shape_entry), end; m != end; ++m)
      if (names.count((*m)[1])) offences.push_back(l.where + ": a stage's shape (\"" + (*m)[1].str() + "\": (...))");
    for (const auto& p : rule_phrases)
      if (l.text.find(p) != std::string::npos) offences.push_back(l.where + ": a /config rule (\"" + p + "\")");
  }
  return offences;
}

}  // namespace

TEST_CASE("stage table: the Python package holds no copy of the stages or the /config rules") {
  // The scan itself finds a copy, and leaves prose alone.
  std::istringstream planted(
      "\"\"\"norm1, qkv, fc1, fc2 in a docstring\"\"\"\n"
      "# \"norm1\", \"qkv\", \"fc1\", \"fc2\" in a comment\n"
      "STAGES = (\"norm1\", \"modulate1\", \"qkv\", \"q_rope\")\n"
      "shapes = {\"fc1\": (S, 2 * F), \"video\": (1, 2)}\n"
      "    raise E(f\"head_dim must be even, got {d}\")\n");
  CHECK(python_stage_copies(ts_test::python_code_lines(planted, "planted.py")).size() == 3);

  int files = 0;
  const auto lines = ts_test::python_package_code_lines(TOUCHSTONE_SOURCE_DIR, &files);
  CHECK(files >= 10);  // the walk found the package
  const auto offences = python_stage_copies(lines);
  for (const auto& o : offences) UNSCOPED_INFO(o);
  CHECK(offences.empty());
}
