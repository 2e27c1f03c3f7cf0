#include "core/phase.hpp"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace ts {
namespace {
// Phases nest by scope on one thread; the depth only indents, so a phase opened on a worker
// thread prints unindented rather than wrongly.
thread_local int t_depth = 0;
}  // namespace

bool Phase::enabled() {
  static const bool on = [] {
    const char* v = std::getenv("TOUCHSTONE_PHASES");
    return v != nullptr && *v != '\0' && std::strcmp(v, "0") != 0;
  }();
  return on;
}

Phase::Phase(std::string name) : name_(std::move(name)), on_(enabled()) {
  if (!on_) return;
  depth_ = t_depth++;
  t0_ = std::chrono::steady_clock::now();
}

Phase::~Phase() {
  if (!on_) return;
  --t_depth;
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
  std::fprintf(stderr, "touchstone: phase %*s%s %.3f s (pid %d)\n", 2 * depth_, "", name_.c_str(), s,
               static_cast<int>(getpid()));
}

}  // namespace ts
