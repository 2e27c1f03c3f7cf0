#include "gates/bootstrap.hpp"

#include <algorithm>
#include <cmath>

#include "core/error.hpp"

namespace ts {
namespace {

struct SplitMix64 {
  uint64_t s;
  uint64_t next() {
    uint64_t z = (s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  size_t below(size_t n) { return static_cast<size_t>(next() % n); }
};

double stat_of(std::vector<double>& v, Statistic s) {
  return s == Statistic::median ? median_of(v) : mean_of(v);
}

void check(const std::vector<double>& v, const char* what) {
  if (v.empty()) throw InputError(std::string("bootstrap: no ") + what + " samples");
  for (double x : v)
    if (!std::isfinite(x) || x <= 0)
      throw InputError(std::string("bootstrap: ") + what + " sample is not a positive finite number");
}

Interval finish(std::vector<double>& stats, double point, double confidence, int resamples,
                uint64_t seed) {
  std::sort(stats.begin(), stats.end());
  const double alpha = 1.0 - confidence;
  const double R = static_cast<double>(stats.size());
  auto at = [&](double q) {
    const double pos = std::clamp(std::floor(q * R), 0.0, R - 1);
    return stats[static_cast<size_t>(pos)];
  };
  Interval iv;
  iv.point = point;
  iv.lower = at(alpha / 2);
  iv.upper = at(1.0 - alpha / 2);
  iv.confidence = confidence;
  iv.resamples = resamples;
  iv.seed = seed;
  return iv;
}

}  // namespace

double median_of(std::vector<double> v) {
  if (v.empty()) throw InternalError("median of no samples");
  const size_t n = v.size();
  std::nth_element(v.begin(), v.begin() + static_cast<long>(n / 2), v.end());
  const double hi = v[n / 2];
  if (n % 2) return hi;
  const double lo = *std::max_element(v.begin(), v.begin() + static_cast<long>(n / 2));
  return 0.5 * (lo + hi);
}

double mean_of(const std::vector<double>& v) {
  if (v.empty()) throw InternalError("mean of no samples");
  double s = 0;
  for (double x : v) s += x;
  return s / static_cast<double>(v.size());
}

Interval bootstrap_paired(const std::vector<double>& ratios, double confidence, uint64_t seed,
                          Statistic stat, int resamples) {
  check(ratios, "ratio");
  SplitMix64 rng{seed};
  std::vector<double> stats, draw(ratios.size());
  stats.reserve(static_cast<size_t>(resamples));
  for (int r = 0; r < resamples; ++r) {
    for (auto& x : draw) x = ratios[rng.below(ratios.size())];
    stats.push_back(stat_of(draw, stat));
  }
  std::vector<double> copy = ratios;
  Interval iv = finish(stats, stat_of(copy, stat), confidence, resamples, seed);
  iv.samples = static_cast<int64_t>(ratios.size());
  iv.method = std::string("bootstrap of the ") + (stat == Statistic::median ? "median" : "mean") +
              " of paired ratios";
  return iv;
}

Interval bootstrap_unpaired(const std::vector<double>& baseline_ms,
                            const std::vector<double>& candidate_ms, double confidence,
                            uint64_t seed, Statistic stat, int resamples) {
  check(baseline_ms, "baseline");
  check(candidate_ms, "candidate");
  SplitMix64 rng{seed};
  std::vector<double> stats, db(baseline_ms.size()), dc(candidate_ms.size());
  stats.reserve(static_cast<size_t>(resamples));
  for (int r = 0; r < resamples; ++r) {
    for (auto& x : db) x = baseline_ms[rng.below(baseline_ms.size())];
    for (auto& x : dc) x = candidate_ms[rng.below(candidate_ms.size())];
    stats.push_back(stat_of(db, stat) / stat_of(dc, stat));
  }
  std::vector<double> b = baseline_ms, c = candidate_ms;
  Interval iv = finish(stats, stat_of(b, stat) / stat_of(c, stat), confidence, resamples, seed);
  iv.samples = static_cast<int64_t>(std::min(baseline_ms.size(), candidate_ms.size()));
  iv.method = std::string("unpaired bootstrap of the ratio of ") +
              (stat == Statistic::median ? "medians" : "means");
  return iv;
}

nlohmann::json Interval::to_json() const {
  return {{"point", point},           {"lower", lower},     {"upper", upper},
          {"confidence", confidence}, {"resamples", resamples}, {"seed", seed},
          {"samples", samples},       {"method", method}};
}

}  // namespace ts
