#pragma once
// The child process of `touchstone scan --worker CMD` (drivers/scan.hpp: the protocol).
#include <string>
#include <sys/types.h>

namespace ts {

class ScanWorker {
 public:
  explicit ScanWorker(const std::string& command);  // InputError when it cannot be started
  ~ScanWorker();
  ScanWorker(const ScanWorker&) = delete;
  ScanWorker& operator=(const ScanWorker&) = delete;
  // "" when the worker answered ok, else what went wrong (its message, or how it ended).
  std::string run(const std::string& fixture);

 private:
  std::string ended();  // how the child ended, once it has
  pid_t pid_ = -1;
  int to_ = -1, from_ = -1;
  std::string buffer_;
};

}  // namespace ts
