#pragma once
// Subcommands register themselves from their own file (tools/cmd_*.cpp), so a
// command's options, help and action live together. A path with a space
// ("fixture synth", "bench reference") nests under its parent command.
#include <CLI/CLI.hpp>
#include <functional>
#include <string>

namespace ts::cli {

// Called once the command line is parsed; returns the process exit code.
using Action = std::function<int()>;
// Adds the command's options to `app` and returns its action. Variables the
// action reads live in a struct the setup allocates (shared_ptr captured).
using Setup = std::function<Action(CLI::App& app)>;

struct Registration {
  Registration(const std::string& path, const std::string& help, Setup setup);
};

}  // namespace ts::cli
