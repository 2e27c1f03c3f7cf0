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
  for (int64_t p = 0; p < opts.pairs; ++p) {
    timer.start();
    candidate(p);
    s.candidate_ms.push_back(timer.stop_ms());
    timer.start();
    baseline(p);
    s.baseline_ms.push_back(timer.stop_ms());
    const double spent = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (opts.budget_s > 0 && spent >= opts.budget_s && p + 1 >= opts.min_pairs) break;
  }
  return s;
}

}  // namespace ts
