#pragma once
// Golden JSON in tests/tools/data: where two JSON values first differ, for the tests that
// hold a report's figures to those an earlier build computed.
#include <nlohmann/json.hpp>
#include <string>

namespace ts::test {

// The first path where two JSON values differ ("" when equal). Numbers are printed to
// round-trip, so equal parsed doubles are equal bits.
inline std::string first_difference(const nlohmann::json& a, const nlohmann::json& b, const std::string& at = "") {
  if (a.type() != b.type()) return at + " (type)";
  if (a.is_object()) {
    for (auto it = a.begin(); it != a.end(); ++it) {
      if (!b.contains(it.key())) return at + "/" + it.key() + " (missing)";
      const std::string d = first_difference(it.value(), b[it.key()], at + "/" + it.key());
      if (!d.empty()) return d;
    }
    return a.size() == b.size() ? "" : at + " (extra keys)";
  }
  if (a.is_array()) {
    if (a.size() != b.size()) return at + " (length)";
    for (size_t i = 0; i < a.size(); ++i) {
      const std::string d = first_difference(a[i], b[i], at + "/" + std::to_string(i));
      if (!d.empty()) return d;
    }
    return "";
  }
  return a == b ? "" : at + ": " + a.dump() + " vs " + b.dump();
}

}  // namespace ts::test
