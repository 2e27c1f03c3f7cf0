#include "history/provenance.hpp"

#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>

#include "core/error.hpp"

namespace ts::history {
namespace {

std::string trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ' || s.back() == '\t')) s.pop_back();
  size_t b = 0;
  while (b < s.size() && (s[b] == ' ' || s[b] == '\t')) ++b;
  return s.substr(b);
}

// HEAD of the repository holding the working directory; "" when there is none (no git, not a
// repository, no commit yet). git's own complaints are not the user's concern here.
std::string git_head() {
  FILE* p = ::popen("git rev-parse --verify -q HEAD 2>/dev/null", "r");
  if (!p) return "";
  std::string out;
  std::array<char, 256> buf{};
  while (std::fgets(buf.data(), buf.size(), p)) out += buf.data();
  const int st = ::pclose(p);
  if (st != 0) return "";
  out = trimmed(out);
  return out.find_first_not_of("0123456789abcdef") == std::string::npos ? out : "";
}

}  // namespace

Provenance resolve_provenance(const std::string& command, const std::string& commit_flag) {
  Provenance p;
  p.command = command;
  p.touchstone_version = TOUCHSTONE_VERSION;
  std::array<char, 256> host{};
  if (::gethostname(host.data(), host.size() - 1) == 0) p.host = host.data();
  if (!commit_flag.empty()) {
    p.commit = trimmed(commit_flag);
    if (p.commit.empty()) throw InputError("--commit: blank commit");
    p.commit_source = "flag";
    return p;
  }
  if (const char* env = std::getenv("TOUCHSTONE_COMMIT"); env && *env) {
    p.commit = trimmed(env);
    if (p.commit.empty()) throw InputError("TOUCHSTONE_COMMIT is set but blank");
    p.commit_source = "env";
    return p;
  }
  p.commit = git_head();
  if (!p.commit.empty()) p.commit_source = "git";
  return p;
}

}  // namespace ts::history
