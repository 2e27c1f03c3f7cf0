#include "gates/metric_range.hpp"

#include <cmath>
#include <limits>
#include <map>

#include "gates/gate_file.hpp"

namespace ts {

std::string MetricRange::text() const {
  const auto end = [](double v) { return std::isinf(v) ? std::string("inf") : format_number(v, 6); };
  return std::string(lo_open ? "(" : "[") + end(lo) + ", " + end(hi) + (std::isinf(hi) ? ")" : "]");
}

std::optional<MetricRange> metric_range(const std::string& name) {
  constexpr double inf = std::numeric_limits<double>::infinity();
  // Cosine is computed in float64 and may pass 1 by rounding; a measured
  // cosine of 1.0000000001 is that, not bad data.
  static const std::map<std::string, MetricRange> ranges = {
      {"rel_l2", {0, inf}},        {"rel_l1", {0, inf}},
      {"rmse", {0, inf}},          {"max_abs", {0, inf}},
      {"mean_abs", {0, inf}},      {"nonfinite", {0, inf}},
      {"nonfinite_ref", {0, inf}}, {"ulp_max", {0, inf}},
      {"cosine", {-1 - 1e-9, 1 + 1e-9}},
      {"zero_fraction", {0, 1}},   {"zero_fraction_ref", {0, 1}},
      {"identical_fraction", {0, 1}},
      {"speedup", {0, inf, true}}};
  auto it = ranges.find(name);
  if (it == ranges.end()) return std::nullopt;
  return it->second;
}

}  // namespace ts
