#pragma once
// Wall time since construction, in milliseconds: the per-stage timings of the
// host block and its device mirror are read the same way.
#include <chrono>

namespace ts {

class Stopwatch {
 public:
  Stopwatch() : t0_(std::chrono::steady_clock::now()) {}
  double ms() const {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0_).count();
  }

 private:
  std::chrono::steady_clock::time_point t0_;
};

}  // namespace ts
