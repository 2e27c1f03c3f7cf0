#include "drivers/scan_worker.hpp"

#include <cerrno>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/error.hpp"

namespace ts {

ScanWorker::ScanWorker(const std::string& command) {
  int in[2], out[2];
  if (pipe(in) != 0 || pipe(out) != 0) throw InputError("--worker: cannot make pipes: " + std::string(std::strerror(errno)));
  pid_ = fork();
  if (pid_ < 0) throw InputError("--worker: cannot fork: " + std::string(std::strerror(errno)));
  if (pid_ == 0) {
    dup2(in[0], 0);
    dup2(out[1], 1);
    close(in[0]);
    close(in[1]);
    close(out[0]);
    close(out[1]);
    execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  close(in[0]);
  close(out[1]);
  to_ = in[1];
  from_ = out[0];
  fcntl(to_, F_SETFD, FD_CLOEXEC);
  fcntl(from_, F_SETFD, FD_CLOEXEC);
  // A worker that dies must fail an evaluation, not kill touchstone by SIGPIPE.
  std::signal(SIGPIPE, SIG_IGN);
}

ScanWorker::~ScanWorker() {
  if (to_ >= 0) {
    const char quit[] = "quit\n";
    [[maybe_unused]] const ssize_t n = write(to_, quit, sizeof quit - 1);
    close(to_);
  }
  if (from_ >= 0) close(from_);
  if (pid_ > 0) {
    int status = 0;
    waitpid(pid_, &status, 0);
  }
}

std::string ScanWorker::ended() {
  int status = 0;
  if (pid_ > 0 && waitpid(pid_, &status, 0) == pid_) {
    pid_ = -1;
    if (WIFEXITED(status)) return "the worker exited with status " + std::to_string(WEXITSTATUS(status));
    if (WIFSIGNALED(status)) return "the worker was killed by signal " + std::to_string(WTERMSIG(status));
  }
  return "the worker has ended";
}

std::string ScanWorker::run(const std::string& fixture) {
  if (pid_ <= 0) return "the worker has ended";
  const std::string line = "run " + fixture + "\n";
  for (size_t done = 0; done < line.size();) {
    const ssize_t n = write(to_, line.data() + done, line.size() - done);
    if (n <= 0) return ended();
    done += static_cast<size_t>(n);
  }
  for (;;) {
    const size_t nl = buffer_.find('\n');
    if (nl != std::string::npos) {
      const std::string reply = buffer_.substr(0, nl);
      buffer_.erase(0, nl + 1);
      if (reply == "ok") return "";
      if (reply.rfind("error", 0) == 0) {
        const std::string m = reply.size() > 6 ? reply.substr(6) : "the worker reported an error";
        return m.empty() ? "the worker reported an error" : m;
      }
      return "the worker answered '" + reply.substr(0, 200) + "' (expected ok or error MESSAGE)";
    }
    char buf[4096];
    const ssize_t n = read(from_, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return ended();
    buffer_.append(buf, static_cast<size_t>(n));
  }
}

}  // namespace ts
