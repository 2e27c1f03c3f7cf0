#include "history/short_ids.hpp"

#include <algorithm>

namespace ts::history {
namespace {

size_t common_prefix(const std::string& a, const std::string& b) {
  size_t n = 0;
  while (n < a.size() && n < b.size() && a[n] == b[n]) ++n;
  return n;
}

}  // namespace

ShortIds::ShortIds(std::vector<std::string> ids, size_t min_length) : sorted_(std::move(ids)), min_(min_length) {
  std::sort(sorted_.begin(), sorted_.end());
  sorted_.erase(std::unique(sorted_.begin(), sorted_.end()), sorted_.end());
}

std::string ShortIds::operator()(const std::string& id) const {
  // In sorted order the identities sharing the longest prefix with `id` are its neighbours.
  const auto at = std::lower_bound(sorted_.begin(), sorted_.end(), id);
  size_t shared = 0;
  if (at != sorted_.end() && *at != id) shared = std::max(shared, common_prefix(*at, id));
  if (at != sorted_.end() && *at == id && at + 1 != sorted_.end()) shared = std::max(shared, common_prefix(at[1], id));
  if (at != sorted_.begin()) shared = std::max(shared, common_prefix(at[-1], id));
  return id.substr(0, std::max(min_, shared + 1));
}

std::string identity_digits(const std::string& identity) {
  const size_t colon = identity.find(':');
  return colon == std::string::npos ? identity : identity.substr(colon + 1);
}

}  // namespace ts::history
