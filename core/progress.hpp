#pragma once
// Progress on stderr for work that takes more than a few seconds, shown only
// when stderr is a terminal so that logs and pipes stay clean.
#include <chrono>
#include <cstdint>
#include <string>

namespace ts {

class Progress {
 public:
  Progress(std::string label, int64_t total);
  ~Progress();
  void advance(int64_t n = 1);  // thread-safe
  static bool enabled();        // stderr is a terminal and TOUCHSTONE_NO_PROGRESS unset

 private:
  std::string label_;
  int64_t total_;
  int64_t done_ = 0;
  bool on_;
  std::chrono::steady_clock::time_point start_, last_;
};

}  // namespace ts
