#include "kernels_under_test/plugin_probe.hpp"

#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <vector>

extern char** environ;

namespace ts {
namespace {

// The line the child's plugin_probe_main writes for a reason, else its last line.
std::string reason_in(const std::string& out) {
  const std::string tag = "plugin-probe: ";
  const auto at = out.rfind(tag);
  std::string line;
  if (at != std::string::npos) {
    line = out.substr(at + tag.size());
  } else {
    size_t end = out.find_last_not_of("\n\r ");
    if (end == std::string::npos) return "";
    const size_t start = out.rfind('\n', end);
    line = out.substr(start == std::string::npos ? 0 : start + 1, end + 1 - (start == std::string::npos ? 0 : start + 1));
  }
  const auto nl = line.find('\n');
  return nl == std::string::npos ? line : line.substr(0, nl);
}

}  // namespace

ProbeOutcome run_plugin_probe(const std::string& exe, const std::string& spec, const std::string& fixture,
                              double timeout_s) {
  ProbeOutcome res;
  const std::string self = exe.empty() ? "/proc/self/exe" : exe;
  int fds[2];
  if (pipe(fds) != 0) {
    res.message = std::string("cannot start the plugin probe: pipe: ") + std::strerror(errno);
    return res;
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addclose(&fa, fds[0]);
  posix_spawn_file_actions_adddup2(&fa, fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&fa, fds[1], STDERR_FILENO);
  posix_spawn_file_actions_addclose(&fa, fds[1]);
  std::vector<std::string> args = {self, "__plugin-probe", "--spec", spec, "--fixture", fixture};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, self.c_str(), &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  close(fds[1]);
  if (rc != 0) {
    close(fds[0]);
    res.message = "cannot start the plugin probe " + self + ": " + std::strerror(rc);
    return res;
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  std::string out;
  bool timed_out = false;
  char buf[4096];
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      timed_out = true;
      break;
    }
    pollfd p{fds[0], POLLIN, 0};
    const int pr = poll(&p, 1, static_cast<int>(std::min<long long>(left.count(), 1000)));
    if (pr < 0 && errno == EINTR) continue;
    if (pr <= 0) continue;
    const ssize_t n = read(fds[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // EOF: the child (and anything it started) closed the pipe
    out.append(buf, static_cast<size_t>(n));
    if (out.size() > (1u << 16)) out.erase(0, out.size() - (1u << 15));  // keep the tail
  }
  close(fds[0]);
  if (timed_out) kill(pid, SIGKILL);
  int st = 0;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  const std::string why = reason_in(out);
  if (timed_out) {
    res.message = "timed out: the plugin probe ran longer than " + std::to_string(static_cast<long long>(timeout_s)) +
                  " s and was killed";
  } else if (WIFSIGNALED(st)) {
    const int sig = WTERMSIG(st);
    res.message = "crashed: signal " + std::to_string(sig) + " (" + strsignal(sig) + ") in plugin " + spec +
                  " (isolation probe)" + (why.empty() ? "" : "; last output: " + why);
  } else if (WIFEXITED(st) && WEXITSTATUS(st) == 0) {
    res.ok = true;
  } else {
    res.message = why.empty() ? "the plugin probe exited with code " + std::to_string(WEXITSTATUS(st)) : why;
  }
  return res;
}

}  // namespace ts
