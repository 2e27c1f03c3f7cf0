#pragma once
// The values each figure can take, so that a gate bound or a measured figure
// outside them is refused where it is read (gates/README.md, "Ranges").
#include <optional>
#include <string>

namespace ts {

struct MetricRange {
  double lo, hi;
  bool lo_open = false;  // speedup: 0 itself is not a speedup
  bool contains(double v) const { return (lo_open ? v > lo : v >= lo) && v <= hi; }
  std::string text() const;  // "[0, inf)", "[-1, 1]", "(0, inf)"
};

// A metric of metric_names(), "nonfinite_ref", "zero_fraction_ref" or
// "speedup"; nullopt for anything else (a timing quantity).
std::optional<MetricRange> metric_range(const std::string& name);

}  // namespace ts
