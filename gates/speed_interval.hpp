#pragma once
// The intervals speed rules are judged on (gates/README.md "Timing runs"),
// chosen so that an A/A comparison (a kernel against itself) gives a false
// verdict at most (1 - confidence) / 2 of the time in each direction, whatever
// the distribution of the noise:
// - paired samples (rounds of one timing run): the median of the per-round
//   ratios, with the distribution-free order-statistic interval of the sign
//   test [r(k), r(n+1-k)], k the largest with P(Binomial(n, 1/2) < k) <= (1-c)/2.
//   Too few pairs for any such k: no interval (the rule is missing, and says why).
// - samples of several timing runs a side: one median per run, and Welch's t
//   interval on the difference of the mean log run medians (exp'ed back to a
//   ratio), so that run-to-run variance is what the interval measures.
#include <optional>
#include <string>
#include <vector>

#include "gates/bootstrap.hpp"

namespace ts {

// The smallest number of pairs for which the sign-test interval exists at `confidence`.
int min_pairs_for(double confidence);

// nullopt when ratios.size() < min_pairs_for(confidence). Ratios are baseline/candidate.
std::optional<Interval> sign_interval_paired(const std::vector<double>& ratios, double confidence);

// baseline/candidate from per-run medians (at least 2 a side); Welch's t on logs.
Interval welch_interval_runs(const std::vector<double>& baseline_run_ms, const std::vector<double>& candidate_run_ms,
                             double confidence);

// Student's t quantile (p in (0, 1), df > 0), for the Welch interval.
double student_t_quantile(double p, double df);

}  // namespace ts
