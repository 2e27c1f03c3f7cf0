#pragma once
// A forked worker process that runs one fuzz input after another for a target
// whose library can crash or loop forever on bad input (libhdf5). Forking a
// fresh child per input from libFuzzer's large ASan process costs ~70 ms; the
// worker pays that only when the library kills or hangs it, so the target
// runs near in-process speed while a library crash or loop costs one input,
// not the whole fuzzing run.
//
// Coverage comes back: the worker zeroes its copy of the inline 8-bit
// counters before each input and hands them to the parent through shared
// memory, where they are merged into libFuzzer's own. (Comparison traces for
// the dictionary stay in the worker; edges are what guide the search.)
#include <sys/types.h>

#include <functional>
#include <string>

namespace ts::fuzz {

class PersistentWorker {
 public:
  // What one input ended in.
  enum class Outcome {
    kDone,    // job returned: status() and message() hold its result
    kDied,    // the worker died: wait_status() says how
    kHung,    // no answer within the time limit: the worker was killed
  };

  // `job` runs in the worker on each input and returns a status character
  // and a message ('0' for a clean result by convention).
  explicit PersistentWorker(std::function<std::pair<char, std::string>()> job, double timeout_s);
  ~PersistentWorker();
  PersistentWorker(const PersistentWorker&) = delete;
  PersistentWorker& operator=(const PersistentWorker&) = delete;

  // Runs the job once in the worker (started first if none is alive).
  Outcome run();

  char status() const { return status_; }
  const std::string& message() const { return message_; }
  int wait_status() const { return wait_status_; }
  // Workers started so far (the first one included).
  long spawned() const { return spawned_; }

 private:
  void spawn();
  void reap(bool kill_first);
  [[noreturn]] void serve(int in_fd, int out_fd);

  std::function<std::pair<char, std::string>()> job_;
  double timeout_s_;
  pid_t pid_ = -1;
  int to_worker_ = -1;
  int from_worker_ = -1;
  unsigned char* shared_ = nullptr;  // counters, then the message
  size_t shared_size_ = 0;
  char status_ = 0;
  std::string message_;
  int wait_status_ = 0;
  long spawned_ = 0;
  long runs_in_worker_ = 0;
};

}  // namespace ts::fuzz
