#include "core/suggest.hpp"

#include <algorithm>

#include "core/printable.hpp"

namespace ts {

size_t edit_distance(const std::string& a, const std::string& b) {
  // Optimal string alignment: three rows of the dynamic programme.
  const size_t n = a.size(), m = b.size();
  std::vector<size_t> prev2(m + 1), prev(m + 1), cur(m + 1);
  for (size_t j = 0; j <= m; ++j) prev[j] = j;
  for (size_t i = 1; i <= n; ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= m; ++j) {
      const size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) cur[j] = std::min(cur[j], prev2[j - 2] + 1);
    }
    prev2.swap(prev);
    prev.swap(cur);
  }
  return prev[m];
}

std::optional<std::string> closest_name(const std::string& typed, const std::vector<std::string>& known) {
  const size_t allowed = std::clamp<size_t>(typed.size() / 3, 1, 3);
  std::optional<std::string> best;
  size_t best_d = allowed + 1;
  for (const auto& k : known) {
    const size_t d = edit_distance(typed, k);
    if (d < best_d && d > 0) {
      best = k;
      best_d = d;
    }
  }
  if (best || typed.size() < 2) return best;
  // A name begun and not finished ("vid" for "video"), when only one begins so.
  for (const auto& k : known)
    if (k.size() > typed.size() && k.compare(0, typed.size(), typed) == 0) {
      if (best) return std::nullopt;
      best = k;
    }
  return best;
}

std::string did_you_mean(const std::string& typed, const std::vector<std::string>& known) {
  const auto c = closest_name(typed, known);
  return c ? "did you mean '" + printable(*c) + "'? " : "";
}

std::string join_names(const std::vector<std::string>& names, const std::string& sep) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : sep) + n;
  return out;
}

}  // namespace ts
