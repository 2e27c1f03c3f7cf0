#pragma once
// Runs the built touchstone CLI as a user would, capturing exit code, stdout
// and stderr, for every end-to-end test in tests/tools.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace ts::test {

struct CliResult {
  int code = -1;
  std::string out, err;
};

inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A scratch folder for this test process, removed at exit.
inline const std::string& scratch_dir() {
  struct Dir {
    std::string path;
    Dir() {
      auto d = std::filesystem::temp_directory_path() / ("ts_cli_tests_" + std::to_string(::getpid()));
      std::filesystem::remove_all(d);
      std::filesystem::create_directories(d);
      path = d.string();
    }
    ~Dir() {
      std::error_code ec;
      std::filesystem::remove_all(path, ec);
    }
  };
  static const Dir dir;
  return dir.path;
}

// `args` is appended to the CLI's path as a shell would read it.
inline CliResult run_cli(const std::string& args) {
  const std::string o = scratch_dir() + "/stdout.txt", e = scratch_dir() + "/stderr.txt";
  const std::string cmd = "TOUCHSTONE_NO_PROGRESS=1 \"" + std::string(TOUCHSTONE_CLI) + "\" " + args +
                          " >" + o + " 2>" + e;
  const int st = std::system(cmd.c_str());
  CliResult r;
  r.code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  r.out = read_file(o);
  r.err = read_file(e);
  return r;
}

}  // namespace ts::test
