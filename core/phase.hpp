#pragma once
// Where a command's wall time goes, for the one who asks: with TOUCHSTONE_PHASES=1 every
// scoped Phase prints "touchstone: phase NAME S s" on stderr as it ends (nested phases
// indented), so a slow step on a machine nobody can profile interactively (the GPU machine)
// names its own cost in the log. Off, a Phase is one getenv at construction.
#include <chrono>
#include <string>

namespace ts {

class Phase {
 public:
  explicit Phase(std::string name);
  ~Phase();
  Phase(const Phase&) = delete;
  Phase& operator=(const Phase&) = delete;
  static bool enabled();

 private:
  std::string name_;
  bool on_;
  int depth_ = 0;
  std::chrono::steady_clock::time_point t0_;
};

}  // namespace ts
