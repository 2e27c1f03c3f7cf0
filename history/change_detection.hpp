#pragma once
// Step detection in one series of recorded figures (docs/history.md "Change detection"): an
// optimal partition of the series into segments of constant level, each point weighted by its
// uncertainty, with a penalty per change. A deterministic accuracy figure is exact (only a
// tiny relative floor), so any change of it is a step; a timed figure's uncertainty comes from
// its confidence interval and from the series' own scatter.
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace ts::history {

struct DetectOptions {
  double penalty_per_log_n = 6;  // the cost of one change: this x ln(n), in chi-square units
  double relative_floor = 1e-9;  // the smallest uncertainty, relative to the series' largest |value|
  size_t min_points_for_scatter = 6;  // fewer points: no scatter estimate (too few differences)
  // Records a level of a noisy series spans at least, but for the latest (an outlier is not a
  // level); an exact series' single changed record is a change.
  size_t min_noisy_segment = 2;
};

// Which way a change is worse, from the rule's bound: "up" (an upper bound), "down" (a lower
// bound), "away" (both: further from the middle of the range `center`).
struct Sense {
  std::string worse = "up";
  double center = 0;
};

struct Segment {
  size_t begin = 0, end = 0;  // points [begin, end)
  double level = 0;           // weighted mean
  double standard_error = 0;  // 1 / sqrt(sum of weights)
};

struct Change {
  size_t index = 0;  // the first point after the change
  double before = 0, after = 0;       // the levels of the segments either side
  std::optional<double> relative;     // (after - before) / |before|; none when before is 0
  double z = 0;                       // (after - before) / its standard error
  size_t points_before = 0, points_after = 0;
  // Worse by the rule's sense; whether that is a regression is counts_as_regression's to say
  // (history/series.hpp), by its size too.
  bool worse = false;
};

struct Detection {
  std::vector<Segment> segments;
  std::vector<Change> changes;
  std::vector<double> sigma;  // each point's uncertainty as used
  double scatter = 0;         // the series' point-to-point scatter (0: exact or too few points)
  double penalty = 0;
  bool deterministic = false;  // no point had an interval
};

// `within[i]` is point i's own standard uncertainty (from its interval), or nullopt for a
// deterministic figure. Non-finite values are the caller's to leave out.
Detection detect_changes(const std::vector<double>& y, const std::vector<std::optional<double>>& within,
                         const Sense& sense, const DetectOptions& o = {});

// The standard normal quantile (for an interval's confidence -> sigma).
double normal_quantile(double p);

}  // namespace ts::history
