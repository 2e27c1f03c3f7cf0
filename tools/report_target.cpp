// --json and the report files: one meaning on every subcommand, paths
// checked before any work.
#include <unistd.h>

#include <filesystem>
#include <iostream>

#include "gates/report.hpp"
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
  return app.add_option("--json", target.path, what + " as JSON: on stdout (--json or --json -) or to a file (--json PATH)")
      ->expected(0, 1)
      ->default_str("-")
      ->check(report_path());
}

CLI::Option* add_report_option(CLI::App& app, const std::string& flag, ReportTarget& target,
                               const std::string& help) {
  return app.add_option(flag, target.path, help + " (PATH, or - for stdout)")->check(report_path());
}

void set_example(CLI::App& app, const std::string& example) { app.footer("Example:\n  " + example); }

}  // namespace ts::cli
