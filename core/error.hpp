#pragma once
// Errors that carry the exit code the CLI must return (README.md "The command line": 2 invalid
// input, 3 internal error). Messages are one line and name what and where.
#include <stdexcept>
#include <string>

namespace ts {

enum ExitCode : int { kPass = 0, kGateFailed = 1, kBadInput = 2, kInternal = 3 };

// Bad fixture, gate file, report, flag or value: the user can fix it.
struct InputError : std::runtime_error {
  explicit InputError(const std::string& what) : std::runtime_error(what) {}
};

// A broken invariant inside touchstone itself.
struct InternalError : std::runtime_error {
  explicit InternalError(const std::string& what) : std::runtime_error(what) {}
};

}  // namespace ts
