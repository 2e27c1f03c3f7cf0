#pragma once
// Seeded bootstrap confidence intervals for speedups. The generator is
// splitmix64 and indices are drawn by plain modulo, so the same samples and
// seed give the same interval on every machine and standard library.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace ts {

enum class Statistic { median, mean };

struct Interval {
  double point = 0;  // the statistic on the samples themselves
  double lower = 0, upper = 0;
  double confidence = 0.95;  // two-sided: [q((1-c)/2), q((1+c)/2)] of the resampled statistic
  int resamples = 0;
  uint64_t seed = 0;
  int64_t samples = 0;
  std::string method;  // "paired ratios, median" / "unpaired, ratio of medians" / "single figure"
  nlohmann::json to_json() const;
};

double median_of(std::vector<double> v);  // v must not be empty
double mean_of(const std::vector<double>& v);

// Interval of the median (or mean) of paired ratios (baseline/candidate per pair).
Interval bootstrap_paired(const std::vector<double>& ratios, double confidence, uint64_t seed,
                          Statistic stat = Statistic::median, int resamples = 4000);

// Interval of statistic(baseline)/statistic(candidate) when the samples are
// not paired (stored timings): each side is resampled on its own.
Interval bootstrap_unpaired(const std::vector<double>& baseline_ms,
                            const std::vector<double>& candidate_ms, double confidence,
                            uint64_t seed, Statistic stat = Statistic::median,
                            int resamples = 4000);

}  // namespace ts
