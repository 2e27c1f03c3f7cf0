#pragma once
// Paired timing (gates/README.md "Paired timing"): candidate and baseline run alternately,
// A B A B ..., after warm-up, in one process, so drift (clocks, heat, other
// load) hits both sides alike; each pair gives one ratio baseline/candidate.
#include <chrono>
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

namespace ts {

// Measures one run.
class Timer {
 public:
  virtual ~Timer() = default;
  virtual void start() = 0;
  virtual double stop_ms() = 0;  // milliseconds since start()
};

class SteadyClockTimer final : public Timer {
 public:
  void start() override { t0_ = std::chrono::steady_clock::now(); }
  double stop_ms() override {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0_).count();
  }

 private:
  std::chrono::steady_clock::time_point t0_;
};

// The time a run reports for itself: device backends time their kernels with
// CUDA events (AttentionResult stats "device_ms"), so host-side conversion and
// copies, which a kernel under test would not pay, do not count. A run that
// reports nothing is timed by the steady clock, and counted in fallbacks().
class ReportedTimer final : public Timer {
 public:
  void start() override {
    reported_.reset();
    clock_.start();
  }
  // Called by the run, between start() and stop_ms().
  void report(double ms) { reported_ = ms; }
  double stop_ms() override {
    const double wall = clock_.stop_ms();
    if (reported_) return *reported_;
    ++fallbacks_;
    return wall;
  }
  int fallbacks() const { return fallbacks_; }

 private:
  SteadyClockTimer clock_;
  std::optional<double> reported_;
  int fallbacks_ = 0;
};

struct PairedTimingOptions {
  int warmup = 1;           // unmeasured pairs first
  int pairs = 10;           // measured pairs (the most taken)
  double budget_s = 0;      // > 0: stop early once measuring took this long...
  int min_pairs = 3;        // ...but never with fewer pairs than this
};

struct PairedSamples {
  std::vector<double> candidate_ms, baseline_ms;
  std::vector<double> ratios() const;  // baseline/candidate per pair
  nlohmann::json to_json() const;
};

// Each callable receives the pair index (warm-up pairs count from
// -warmup to -1), so a caller can rotate inputs between pairs and keep
// caches from flattering either side.
using TimedRun = std::function<void(int64_t pair)>;

PairedSamples time_paired(const TimedRun& candidate, const TimedRun& baseline, Timer& timer,
                          const PairedTimingOptions& opts);

}  // namespace ts
