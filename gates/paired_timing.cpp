#include "gates/paired_timing.hpp"

#include "core/error.hpp"

namespace ts {

std::vector<double> PairedSamples::ratios() const {
  std::vector<double> r;
  for (size_t i = 0; i < candidate_ms.size() && i < baseline_ms.size(); ++i)
    r.push_back(baseline_ms[i] / candidate_ms[i]);
  return r;
}

nlohmann::json PairedSamples::to_json() const {
  return {{"candidate_ms", candidate_ms}, {"baseline_ms", baseline_ms}, {"ratios", ratios()}};
}

PairedSamples time_paired(const TimedRun& candidate, const TimedRun& baseline, Timer& timer,
                          const PairedTimingOptions& opts) {
  if (opts.pairs < 1) throw InputError("paired timing: --pairs must be at least 1");
  if (opts.warmup < 0) throw InputError("paired timing: --warmup must not be negative");
  for (int64_t w = -opts.warmup; w < 0; ++w) {
    candidate(w);
    baseline(w);
  }
  PairedSamples s;
  const auto t0 = std::chrono::steady_clock::now();
  // Odd pairs run the baseline first: whatever the first (or second) run of a
  // pair gains from its position (a cache the other left warm, a clock ramping
  // up) falls on each side in half the pairs, so the median ratio is unbiased.
  for (int64_t p = 0; p < opts.pairs; ++p) {
    double c = 0, b = 0;
    for (int side = 0; side < 2; ++side) {
      const bool cand_now = (side == 0) == (p % 2 == 0);
      timer.start();
      (cand_now ? candidate : baseline)(p);
      (cand_now ? c : b) = timer.stop_ms();
    }
    s.candidate_ms.push_back(c);
    s.baseline_ms.push_back(b);
    const double spent = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (opts.budget_s > 0 && spent >= opts.budget_s && p + 1 >= opts.min_pairs) break;
  }
  return s;
}

}  // namespace ts
