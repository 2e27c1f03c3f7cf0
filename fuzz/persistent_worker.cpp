#include "persistent_worker.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <stdexcept>

// The inline 8-bit counters of every instrumented module linked statically
// into the target (the linker bounds the section; libhdf5 is not instrumented).
extern "C" {
extern uint8_t __start___sancov_cntrs[] __attribute__((weak, visibility("hidden")));
extern uint8_t __stop___sancov_cntrs[] __attribute__((weak, visibility("hidden")));
}

namespace ts::fuzz {
namespace {
constexpr size_t kMessageMax = 1 << 16;
// libhdf5 keeps state (free lists, open ids after errors) across files; a
// fresh worker now and then keeps one input from depending on thousands before.
constexpr long kRunsPerWorker = 20000;

size_t counter_count() {
  if (!__start___sancov_cntrs || !__stop___sancov_cntrs) return 0;
  return static_cast<size_t>(__stop___sancov_cntrs - __start___sancov_cntrs);
}

bool write_all(int fd, const void* p, size_t n) {
  const char* c = static_cast<const char*>(p);
  while (n) {
    const ssize_t w = ::write(fd, c, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    c += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}
}  // namespace

PersistentWorker::PersistentWorker(std::function<std::pair<char, std::string>()> job, double timeout_s)
    : job_(std::move(job)), timeout_s_(timeout_s) {
  // A worker that dies between inputs closes its pipe: the next request
  // must fail with EPIPE (a death, seen as one), not kill this process with
  // SIGPIPE, whose default is to end it without a word (a fuzzer on the GPU
  // machine and one here stopped that way). The worker inherits it.
  ::signal(SIGPIPE, SIG_IGN);
  shared_size_ = counter_count() + sizeof(uint32_t) + kMessageMax;
  void* m = ::mmap(nullptr, shared_size_, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) throw std::runtime_error("persistent worker: cannot map shared memory");
  shared_ = static_cast<unsigned char*>(m);
}

PersistentWorker::~PersistentWorker() {
  if (pid_ > 0) reap(true);
  ::munmap(shared_, shared_size_);
}

void PersistentWorker::spawn() {
  int down[2], up[2];
  if (::pipe2(down, O_CLOEXEC) != 0 || ::pipe2(up, O_CLOEXEC) != 0)
    throw std::runtime_error("persistent worker: cannot create pipes");
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("persistent worker: cannot fork");
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(1);
    ::close(down[1]);
    ::close(up[0]);
    serve(down[0], up[1]);
  }
  ::close(down[0]);
  ::close(up[1]);
  pid_ = pid;
  to_worker_ = down[1];
  from_worker_ = up[0];
  runs_in_worker_ = 0;
  ++spawned_;
}

void PersistentWorker::serve(int in_fd, int out_fd) {
  const size_t n = counter_count();
  for (;;) {
    char go = 0;
    ssize_t r;
    while ((r = ::read(in_fd, &go, 1)) < 0 && errno == EINTR) {
    }
    if (r != 1) ::_exit(0);
    if (n) std::memset(__start___sancov_cntrs, 0, n);
    char status = 0;
    {
      const auto [st, message] = job_();
      if (n) std::memcpy(shared_, __start___sancov_cntrs, n);
      const uint32_t len = static_cast<uint32_t>(std::min(message.size(), kMessageMax));
      std::memcpy(shared_ + n, &len, sizeof len);
      std::memcpy(shared_ + n + sizeof len, message.data(), len);
      status = st;
    }
    // The message is freed before the reply: a heap the job damaged (libhdf5 on
    // a corrupt file) then fails here, and the death is this input's, not the
    // next one's.
    if (!write_all(out_fd, &status, 1)) ::_exit(0);
  }
}

void PersistentWorker::reap(bool kill_first) {
  if (kill_first) ::kill(pid_, SIGKILL);
  ::close(to_worker_);
  ::close(from_worker_);
  int st = 0;
  while (::waitpid(pid_, &st, 0) < 0 && errno == EINTR) {
  }
  wait_status_ = st;
  pid_ = -1;
}

PersistentWorker::Outcome PersistentWorker::run() {
  if (pid_ > 0 && runs_in_worker_ >= kRunsPerWorker) reap(true);
  if (pid_ <= 0) spawn();
  ++runs_in_worker_;
  const char go = 'g';
  if (!write_all(to_worker_, &go, 1)) {
    reap(false);
    return Outcome::kDied;
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s_);
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      reap(true);
      return Outcome::kHung;
    }
    struct pollfd pfd {from_worker_, POLLIN, 0};
    const int ready = ::poll(&pfd, 1, static_cast<int>(std::min<long long>(left.count(), 1000)));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) continue;
    char status = 0;
    const ssize_t r = ::read(from_worker_, &status, 1);
    if (r < 0 && errno == EINTR) continue;
    if (r != 1) {
      reap(false);
      return Outcome::kDied;
    }
    const size_t n = counter_count();
    for (size_t i = 0; i < n; ++i)
      __start___sancov_cntrs[i] = std::max(__start___sancov_cntrs[i], shared_[i]);
    uint32_t len = 0;
    std::memcpy(&len, shared_ + n, sizeof len);
    message_.assign(reinterpret_cast<const char*>(shared_ + n + sizeof len), std::min<size_t>(len, kMessageMax));
    status_ = status;
    return Outcome::kDone;
  }
}

}  // namespace ts::fuzz
