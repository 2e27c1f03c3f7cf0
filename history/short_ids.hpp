#pragma once
// Identities shortened as git shortens commits: a prefix of at least 12 characters, longer where
// another identity of the store shares it, so that a terminal line keeps room for the metric and
// the prefix still names one fixture (or commit) and works as `--fixture` text.
#include <cstddef>
#include <map>
#include <string>
#include <vector>

namespace ts::history {

inline constexpr size_t kShortIdLength = 12;

class ShortIds {
 public:
  ShortIds() = default;
  // `ids`: every identity the prefixes must tell apart (repeats allowed).
  explicit ShortIds(std::vector<std::string> ids, size_t min_length = kShortIdLength);
  // The shortest prefix of `id` of at least min_length that no other identity shares; an
  // identity not given to the constructor is told apart from all of them.
  std::string operator()(const std::string& id) const;

 private:
  std::vector<std::string> sorted_;
  size_t min_ = kShortIdLength;
};

// A fixture identity without its algorithm ("sha256:3f2a..." -> "3f2a..."): what is shortened.
std::string identity_digits(const std::string& identity);

}  // namespace ts::history
