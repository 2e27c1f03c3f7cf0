// --json and the report files: one meaning on every subcommand, paths
// checked before any work.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <vector>

#include "core/error.hpp"
#include "core/write_file.hpp"
#include "fixtures/fixture.hpp"
#include "kernels_under_test/registry.hpp"
#include "tools/command.hpp"

namespace ts::cli {
namespace {

// "" when `path` can be written as a report, else why not.
std::string report_path_problem(const std::string& path) {
  if (path == "-") return "";
  if (path.empty()) return "empty path";
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path p(path);
  if (fs::is_directory(p, ec)) return path + " is a folder";
  const fs::path dir = p.parent_path().empty() ? fs::path(".") : p.parent_path();
  if (!fs::is_directory(dir, ec)) return "no folder " + dir.string() + " for " + path;
  if (::access(dir.c_str(), W_OK) != 0) return "folder " + dir.string() + " is not writable";
  return "";
}

std::map<const CLI::Option*, bool>& outputs() {
  static std::map<const CLI::Option*, bool> m;
  return m;
}

// The file an input value names: a path, or plugin:PATH[,key=value...].
std::string file_of(const std::string& v) {
  const auto spec = ts::BackendSpec::try_parse(v);
  return spec && spec->is_plugin() ? spec->argument() : v;
}

bool starts_with_bytes(const std::string& path, const std::string& sig) {
  std::ifstream in(path, std::ios::binary);
  std::string head(sig.size(), '\0');
  return in.read(head.data(), static_cast<std::streamsize>(head.size())) && head == sig;
}

// What a report must never replace: a fixture, or a results store (history's SQLite file) and
// the journal files beside it that SQLite needs to recover it. "" when none of these.
std::string data_file_kind(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return "";
  if (starts_with_bytes(path, std::string("\x89HDF\r\n\x1a\n", 8))) return "an HDF5 file (a fixture?)";
  const std::string sqlite("SQLite format 3\0", 16);
  if (starts_with_bytes(path, sqlite)) return "a SQLite database (a results store?)";
  for (const char* suffix : {"-wal", "-shm", "-journal"}) {
    const std::string s(suffix);
    if (path.size() > s.size() && path.compare(path.size() - s.size(), s.size(), s) == 0 &&
        starts_with_bytes(path.substr(0, path.size() - s.size()), sqlite))
      return "a SQLite journal of " + path.substr(0, path.size() - s.size()) + " (a results store?)";
  }
  return "";
}

std::string flag_of(const CLI::Option* o) {
  const std::string n = o->get_name();
  return n.empty() ? std::string("an argument") : n;
}

CLI::Validator report_path() {
  return CLI::Validator(
      [](std::string& v) { return report_path_problem(v); }, "PATH", "report path");
}

}  // namespace

void ReportTarget::emit(const std::string& text) const {
  if (!on()) return;
  if (to_stdout()) std::cout << text << std::flush;
  else write_file_atomic(path, text);
}

CLI::Option* add_json_option(CLI::App& app, ReportTarget& target, const std::string& what) {
  CLI::Option* o =
      app.add_option("--json", target.path, what + " as JSON: on stdout (--json or --json -) or to a file (--json PATH)")
      ->expected(0, 1)
      ->default_str("-")
      ->check(report_path());
  mark_output(o, true);
  return o;
}

CLI::Option* add_report_option(CLI::App& app, const std::string& flag, ReportTarget& target,
                               const std::string& help) {
  CLI::Option* o = app.add_option(flag, target.path, help + " (PATH, or - for stdout)")->check(report_path());
  mark_output(o, true);
  return o;
}

void mark_output(CLI::Option* option, bool report) { outputs()[option] = report; }

void check_outputs(const CLI::App& command) {
  namespace fs = std::filesystem;
  std::vector<std::pair<const CLI::Option*, std::string>> inputs, given;
  for (const CLI::App* a = &command; a; a = a->get_parent())
    for (const CLI::Option* o : a->get_options()) {
      if (o->count() == 0) continue;
      const bool out = outputs().count(o) > 0;
      for (const auto& v : o->results())
        if (!v.empty() && v != "-") (out ? given : inputs).emplace_back(o, v);
    }
  for (size_t i = 0; i < given.size(); ++i) {
    const auto& [o, path] = given[i];
    std::error_code ec;
    // Two reports to one device (/dev/null) are fine; to one file, one would be lost.
    const bool device = fs::exists(path, ec) && !fs::is_regular_file(path, ec);
    for (size_t j = 0; j < i && !device; ++j)
      if (fs::weakly_canonical(path, ec) == fs::weakly_canonical(given[j].second, ec))
        throw InputError(flag_of(o) + " " + path + " is also " + flag_of(given[j].first) +
                         ": one file cannot hold both outputs");
    if (const std::string owned = fixture_owned_file(path); !owned.empty())
      throw InputError(flag_of(o) + " " + path + " is " + owned + ": refusing to write over it; write the " +
                       (outputs()[o] ? "report" : "output") + " elsewhere");
    if (!fs::exists(path, ec)) continue;
    for (const auto& [in, v] : inputs) {
      const std::string file = file_of(v);
      if (fs::exists(file, ec) && fs::equivalent(path, file, ec))
        throw InputError(flag_of(o) + " " + path + " is also an input (" + flag_of(in) + " " + v +
                         "): refusing to overwrite it; write the output elsewhere");
    }
    if (!outputs()[o]) continue;
    if (const std::string kind = data_file_kind(path); !kind.empty())
      throw InputError(flag_of(o) + " " + path + " is " + kind + ", not a report: "
                       "refusing to overwrite it; write the report elsewhere");
  }
}

void set_example(CLI::App& app, const std::string& example) { app.footer("Example:\n  " + example); }

}  // namespace ts::cli
