#pragma once
// Golden JSON in tests/tools/data: where two JSON values first differ, for the tests that
// hold a report's figures to those an earlier build computed.
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

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

// A report as a golden file holds it: no timing (keys "ms", "*_ms", "threads", and those in
// `more_keys`; a gate table's "wall ms" column), every prefix in `cut` (a scratch folder, the
// plugin folder) cut from every string, since no two runs or machines share them.
inline void normalise_report(nlohmann::json& j, const std::vector<std::string>& cut,
                             const std::vector<std::string>& more_keys = {}) {
  if (j.is_object()) {
    for (auto it = j.begin(); it != j.end();) {
      const std::string& k = it.key();
      bool drop = k == "ms" || k == "threads" || (k.size() > 3 && k.compare(k.size() - 3, 3, "_ms") == 0);
      for (const auto& m : more_keys) drop = drop || k == m;
      if (drop) {
        it = j.erase(it);
        continue;
      }
      normalise_report(it.value(), cut, more_keys);
      ++it;
    }
    if (j.contains("columns") && j["columns"].is_array() && j.contains("candidates") && j["candidates"].is_array())
      for (size_t c = 0; c < j["columns"].size(); ++c)
        if (j["columns"][c].is_string() && j["columns"][c].get<std::string>().find(" ms") != std::string::npos)
          for (auto& cand : j["candidates"])
            if (cand.contains("shown") && c < cand["shown"].size()) cand["shown"][c] = "-";
  } else if (j.is_array()) {
    for (auto& e : j) normalise_report(e, cut, more_keys);
  } else if (j.is_string()) {
    std::string s = j.get<std::string>();
    for (const auto& d : cut)
      for (size_t p; (p = s.find(d + "/")) != std::string::npos;) s.erase(p, d.size() + 1);
    j = s;
  }
}

// With TOUCHSTONE_WRITE_GOLDEN=1, `got` becomes the golden file at `path` (true: the caller
// then returns, having compared nothing); else false, and the caller compares against it.
inline bool write_golden_if_asked(const std::string& path, const nlohmann::json& got) {
  const char* write = std::getenv("TOUCHSTONE_WRITE_GOLDEN");
  if (!write || std::string(write) != "1") return false;
  std::ofstream(path) << got.dump(1) << "\n";
  return true;
}

}  // namespace ts::test
