#include "core/progress.hpp"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>

namespace ts {
namespace {
std::mutex g_progress_mutex;
}

bool Progress::enabled() {
  return isatty(STDERR_FILENO) && std::getenv("TOUCHSTONE_NO_PROGRESS") == nullptr;
}

Progress::Progress(std::string label, int64_t total)
    : label_(std::move(label)), total_(total), on_(enabled()) {
  start_ = last_ = std::chrono::steady_clock::now();
}

Progress::~Progress() {
  if (!on_) return;
  const auto secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  // Only runs that showed a line clear it; short ones never printed.
  if (secs >= 2.0) std::fprintf(stderr, "\r\033[K");
}

void Progress::advance(int64_t n) {
  if (!on_) return;
  std::lock_guard<std::mutex> lock(g_progress_mutex);
  done_ += n;
  const auto now = std::chrono::steady_clock::now();
  const double since_start = std::chrono::duration<double>(now - start_).count();
  const double since_last = std::chrono::duration<double>(now - last_).count();
  if (since_start < 2.0 || since_last < 0.25) return;
  last_ = now;
  const double frac = total_ > 0 ? double(done_) / double(total_) : 0.0;
  std::fprintf(stderr, "\r\033[K%s: %3.0f%% (%.0f s)", label_.c_str(), 100.0 * frac, since_start);
  std::fflush(stderr);
}

}  // namespace ts
