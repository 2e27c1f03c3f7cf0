#include "history/change_detection.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace ts::history {

double normal_quantile(double p) {
  // Bisection on the normal CDF: slow beside a rational approximation, but exact to the double
  // and called once per point.
  if (!(p > 0 && p < 1)) return std::numeric_limits<double>::quiet_NaN();
  double lo = -40, hi = 40;
  for (int i = 0; i < 200 && hi - lo > 1e-15; ++i) {
    const double mid = (lo + hi) / 2;
    (0.5 * std::erfc(-mid / std::sqrt(2.0)) < p ? lo : hi) = mid;
  }
  return (lo + hi) / 2;
}

Detection detect_changes(const std::vector<double>& y, const std::vector<std::optional<double>>& within,
                         const Sense& sense, const DetectOptions& o) {
  Detection d;
  const size_t n = y.size();
  if (n == 0) return d;
  d.deterministic = std::none_of(within.begin(), within.end(), [](const auto& w) { return w.has_value(); });

  // Scatter from successive differences: a step is one difference among many, so the median
  // sees the noise, not the steps. A deterministic figure that repeats exactly has none.
  if (n >= o.min_points_for_scatter) {
    std::vector<double> diffs;
    for (size_t i = 1; i < n; ++i) diffs.push_back(std::fabs(y[i] - y[i - 1]));
    std::nth_element(diffs.begin(), diffs.begin() + static_cast<std::ptrdiff_t>(diffs.size() / 2), diffs.end());
    double med = diffs[diffs.size() / 2];
    if (diffs.size() % 2 == 0) {
      const double lower = *std::max_element(diffs.begin(), diffs.begin() + static_cast<std::ptrdiff_t>(diffs.size() / 2));
      med = (med + lower) / 2;
    }
    // median |N(0, 2 s^2)| = 0.6745 * sqrt(2) * s
    d.scatter = med / (0.67448975 * std::sqrt(2.0));
  }
  double largest = 0;
  for (double v : y) largest = std::max(largest, std::fabs(v));
  const double floor = largest > 0 ? o.relative_floor * largest : 1.0;
  d.sigma.resize(n);
  std::vector<double> w(n);
  for (size_t i = 0; i < n; ++i) {
    double s = std::max(floor, d.scatter);
    if (i < within.size() && within[i] && std::isfinite(*within[i])) s = std::max(s, *within[i]);
    d.sigma[i] = s;
    w[i] = 1 / (s * s);
  }

  // Optimal partitioning: best[j] = min over i < j of best[i] + cost(i, j) + penalty, where
  // cost is the weighted squared deviation from the segment's weighted mean, accumulated by
  // West's update (stable where prefix sums of huge weights would cancel).
  const size_t min_len = d.deterministic && d.scatter == 0 ? 1 : std::max<size_t>(1, o.min_noisy_segment);
  d.penalty = o.penalty_per_log_n * std::log(static_cast<double>(std::max<size_t>(n, 2)));
  std::vector<double> best(n + 1, std::numeric_limits<double>::infinity());
  std::vector<size_t> from(n + 1, 0);
  best[0] = -d.penalty;
  for (size_t i = 0; i < n; ++i) {
    // Starting at the segment's first value: a run of equal figures costs exactly 0, where a
    // start at 0 would leave rounding of the mean that a weight of 1e18 makes a false step.
    double sw = 0, mean = y[i], m2 = 0;
    for (size_t j = i; j < n; ++j) {
      const double nw = sw + w[j], dv = y[j] - mean;
      mean += dv * w[j] / nw;
      m2 += w[j] * dv * (y[j] - mean);
      sw = nw;
      // A noisy series' single record between two others is an outlier, not a level: it makes
      // no segment of its own (two false changes, the second a "regression" back to normal),
      // except as the latest record, which may be the start of a new level.
      if (j + 1 - i < min_len && j + 1 != n) continue;
      const double c = best[i] + m2 + d.penalty;
      if (c < best[j + 1]) {
        best[j + 1] = c;
        from[j + 1] = i;
      }
    }
  }
  std::vector<size_t> starts;
  for (size_t j = n; j > 0; j = from[j]) starts.push_back(from[j]);
  std::reverse(starts.begin(), starts.end());
  for (size_t k = 0; k < starts.size(); ++k) {
    Segment s;
    s.begin = starts[k];
    s.end = k + 1 < starts.size() ? starts[k + 1] : n;
    double sw = 0, swy = 0;
    for (size_t i = s.begin; i < s.end; ++i) {
      sw += w[i];
      swy += w[i] * (y[i] - y[s.begin]);  // about the first value: exact for a constant segment
    }
    s.level = y[s.begin] + swy / sw;
    s.standard_error = 1 / std::sqrt(sw);
    d.segments.push_back(s);
  }
  for (size_t k = 1; k < d.segments.size(); ++k) {
    const Segment &a = d.segments[k - 1], &b = d.segments[k];
    Change c;
    c.index = b.begin;
    c.before = a.level;
    c.after = b.level;
    if (a.level != 0) c.relative = (b.level - a.level) / std::fabs(a.level);
    c.z = (b.level - a.level) / std::hypot(a.standard_error, b.standard_error);
    c.points_before = a.end - a.begin;
    c.points_after = b.end - b.begin;
    if (sense.worse == "down") c.worse = b.level < a.level;
    else if (sense.worse == "away") c.worse = std::fabs(b.level - sense.center) > std::fabs(a.level - sense.center);
    else c.worse = b.level > a.level;
    d.changes.push_back(c);
  }
  return d;
}

}  // namespace ts::history
