// Paired timing and the seeded bootstrap.
#include <chrono>
#include <thread>

#include "catch.hpp"
#include "gates/judge_for_tests.hpp"
#include "gates/bootstrap.hpp"
#include "gates/gate_file.hpp"
#include "gates/paired_timing.hpp"
#include "gates/verdict.hpp"

using namespace ts;

namespace {
void busy_ms(double ms) {
  const auto t0 = std::chrono::steady_clock::now();
  while (std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() < ms) {
  }
}
GateFile faster_gate() { return load_gate("sparse_acceptance"); }
Evidence speed_evidence(const Interval& iv) {
  Evidence e;
  e.candidate = std::string("c");
  e.vs_baseline["attention"]["rel_l2"] = 0.01;
  SpeedEvidence s;
  s.interval = iv;
  e.speed = s;
  return e;
}
}  // namespace

TEST_CASE("bootstrap is deterministic for a seed and depends on it") {
  const std::vector<double> r{1.1, 0.9, 1.3, 1.05, 0.97, 1.2, 1.01, 0.88, 1.15, 1.07};
  const Interval a = bootstrap_paired(r, 0.95, 7), b = bootstrap_paired(r, 0.95, 7);
  CHECK(a.lower == b.lower);
  CHECK(a.upper == b.upper);
  CHECK(a.point == Approx(1.06));  // median of the ten ratios
  CHECK(a.lower <= a.point);
  CHECK(a.point <= a.upper);
  const Interval c = bootstrap_paired(r, 0.95, 8);
  CHECK(c.point == a.point);
  const Interval narrow = bootstrap_paired(r, 0.5, 7);
  CHECK(narrow.upper - narrow.lower <= a.upper - a.lower);
  const Interval mean = bootstrap_paired(r, 0.95, 7, Statistic::mean);
  CHECK(mean.point == Approx(1.063));
}

TEST_CASE("a noisy pair whose interval straddles 1.0 is INCONCLUSIVE") {
  const std::vector<double> noisy{0.7, 1.4, 0.8, 1.3, 0.75, 1.35, 0.9, 1.2, 1.0, 1.05};
  const Interval iv = bootstrap_paired(noisy, 0.95, 1);
  REQUIRE(iv.lower < 1.0);
  REQUIRE(iv.upper > 1.0);
  CHECK(judge_for_test(faster_gate(), speed_evidence(iv), "").verdict == Verdict::inconclusive);
}

// Sleeping rather than spinning: on a loaded 2-core CI machine a spinning
// callable is preempted and its sample inflated, a sleeping one barely.
void sleep_ms(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

TEST_CASE("paired timing: a clearly faster callable passes, in A B, B A order with rotation") {
  std::vector<int64_t> seen;
  std::vector<char> order;
  SteadyClockTimer timer;
  PairedTimingOptions opts;
  opts.warmup = 1;
  opts.pairs = 12;
  const PairedSamples s = time_paired(
      [&](int64_t p) {
        order.push_back('A');
        seen.push_back(p);
        sleep_ms(1);
      },
      [&](int64_t) {
        order.push_back('B');
        sleep_ms(3);
      },
      timer, opts);
  REQUIRE(s.candidate_ms.size() == 12);
  REQUIRE(s.baseline_ms.size() == 12);
  CHECK(seen.front() == -1);  // warm-up pair index
  CHECK(seen.back() == 11);
  // Warm-up A B, then pairs alternating A B, B A: a position's advantage falls on each side in half the pairs.
  REQUIRE(order.size() == 26);
  CHECK(order[0] == 'A');
  CHECK(order[1] == 'B');
  for (size_t p = 0; p < 12; ++p) {
    CHECK(order[2 + 2 * p] == (p % 2 ? 'B' : 'A'));
    CHECK(order[3 + 2 * p] == (p % 2 ? 'A' : 'B'));
  }
  const Interval iv = bootstrap_paired(s.ratios(), 0.95, 3);
  CHECK(iv.lower > 1.5);
  CHECK(judge_for_test(faster_gate(), speed_evidence(iv), "").verdict == Verdict::accept);
}

TEST_CASE("paired timing stops at its budget but not below min_pairs") {
  SteadyClockTimer timer;
  PairedTimingOptions opts;
  opts.warmup = 0;
  opts.pairs = 1000;
  opts.budget_s = 0.001;
  opts.min_pairs = 4;
  const PairedSamples s = time_paired([](int64_t) { busy_ms(0.5); }, [](int64_t) { busy_ms(0.5); }, timer, opts);
  CHECK(s.candidate_ms.size() == 4);
}

TEST_CASE("unpaired bootstrap of stored samples") {
  const std::vector<double> base{10, 11, 10.5, 10.2, 10.8}, cand{5, 5.2, 5.1, 4.9, 5.3};
  const Interval iv = bootstrap_unpaired(base, cand, 0.95, 11);
  CHECK(iv.point == Approx(10.5 / 5.1));
  CHECK(iv.lower > 1.8);
  CHECK(iv.upper < 2.3);
  CHECK(bootstrap_unpaired(base, cand, 0.95, 11).lower == iv.lower);
}

TEST_CASE("reported timer: device backends are paired on the time they report") {
  ReportedTimer t;
  PairedTimingOptions po;
  po.pairs = 6;
  po.warmup = 1;
  // The host side sleeps differently from what the "kernels" report: only the
  // reported figures may count.
  const PairedSamples s = time_paired(
      [&](int64_t) { std::this_thread::sleep_for(std::chrono::milliseconds(3)); t.report(1.25); },
      [&](int64_t) { t.report(2.5); }, t, po);
  REQUIRE(s.ratios().size() == 6);
  for (double r : s.ratios()) CHECK(r == 2.0);
  for (double ms : s.candidate_ms) CHECK(ms == 1.25);
  CHECK(t.fallbacks() == 0);
  // A run that reports nothing falls back to its steady-clock time, and is counted.
  t.start();
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  const double wall = t.stop_ms();
  CHECK(wall >= 2.0);
  CHECK(t.fallbacks() == 1);
  // A report belongs to one run: start() forgets the previous one.
  t.start();
  t.report(7.0);
  CHECK(t.stop_ms() == 7.0);
  t.start();
  CHECK(t.stop_ms() != 7.0);
  CHECK(t.fallbacks() == 2);
}
