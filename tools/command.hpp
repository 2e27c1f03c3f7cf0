#pragma once
// Subcommands register themselves from their own file (tools/cmd_*.cpp), so a
// command's options, help and action live together. A path with a space
// ("fixture synth", "bench reference") nests under its parent command.
// Each file's own Opts, run and reg live in a namespace named after the file
// (cmd_demo, ...), not an anonymous one: CI's unity build joins the files.
#include <CLI/CLI.hpp>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

namespace ts::cli {

// Called once the command line is parsed; returns the process exit code.
using Action = std::function<int()>;
// Adds the command's options to `app` and returns its action. Variables the
// action reads live in a struct the setup allocates (shared_ptr captured).
using Setup = std::function<Action(CLI::App& app)>;

struct Registration {
  Registration(const std::string& path, const std::string& help, Setup setup);
};

// Where a report goes: "" not asked, "-" stdout, else that file.
struct ReportTarget {
  std::string path;
  bool on() const { return !path.empty(); }
  bool to_stdout() const { return path == "-"; }
  // Prints or writes (atomically) `text`.
  void emit(const std::string& text) const;
};
// --json [PATH] the same way on every subcommand: alone or "-" prints the JSON
// on stdout (instead of the text), a path writes that file (and the text
// still goes to stdout). The path is checked when the command line is
// parsed, so a bad one exits 2 before any work.
CLI::Option* add_json_option(CLI::App& app, ReportTarget& target, const std::string& what);
// --junit/--markdown/--html PATH: a report file ("-": stdout), checked at parse time.
CLI::Option* add_report_option(CLI::App& app, const std::string& flag, ReportTarget& target,
                               const std::string& help);
// Marks an option as naming a file the command writes: a report (JSON, HTML,
// Markdown, JUnit: never written over an HDF5 file) or another output (a
// fixture, with its own --force). add_json_option and add_report_option mark theirs.
void mark_output(CLI::Option* option, bool report);
// Before any work: an output that is also one of the command's inputs, the
// same file as another output, a file a fixture owns beside itself (its lock,
// its outputs folder: fixture_owned_file), or (for a report) an existing HDF5
// file is refused with an InputError; nothing already on disk is lost.
void check_outputs(const CLI::App& command);
// Checks of numeric options that name what is wrong ("'5abc' is not a whole number", "-1 is
// out of range: expected 1 to 1000"); hi defaults to no upper bound.
CLI::Validator integer_in(long long lo, long long hi = std::numeric_limits<long long>::max());
CLI::Validator number_at_least(double lo, bool strictly = false);
// Any finite number; an empty value (--tau "") is refused. list: each item of
// a comma-separated list (sweep --tau 1,2), as the empty value's message says.
CLI::Validator finite_number(bool list = false);
// A list of numbers (--tau 1,1.3,2; repeatable): each item a finite number, no empty item
// ("1,,2") and no value twice, checked as the command line is parsed.
CLI::Option* add_number_list_option(CLI::App& app, const std::string& flag, std::vector<double>& target,
                                    const std::string& help);
// InputError naming the first value of a list option (--candidate, --stored) given twice.
void refuse_repeats(const std::vector<std::string>& values, const std::string& flag);
// --seed, alike in every command: a whole number 0 .. 2^63 - 1 (unchecked, CLI11 read -5 as 2^64 - 5).
CLI::Option* add_seed_option(CLI::App& app, uint64_t& seed, const std::string& what);
// "Example:" lines under a subcommand's --help.
void set_example(CLI::App& app, const std::string& example);

}  // namespace ts::cli
