#pragma once
// Where a recorded run came from: which touchstone, which commit of the kernel under test, which
// command on which host. The commit is what a history series is ordered and reported by.
#include <string>

namespace ts::history {

struct Provenance {
  std::string command;             // "gate", "sweep"
  std::string commit;              // "" = unknown (stored as NULL)
  std::string commit_source;       // "flag", "env", "git", "" when unknown
  std::string touchstone_version;  // TOUCHSTONE_VERSION of the recorder
  std::string host;
};

// The commit of the kernel under test: `commit_flag` (--commit), else the environment's
// TOUCHSTONE_COMMIT, else `git rev-parse HEAD` of the working directory when it is inside a
// git repository, else unknown. A flag or variable that is set but blank is bad input.
Provenance resolve_provenance(const std::string& command, const std::string& commit_flag);

}  // namespace ts::history
