#include "gates/speed_interval.hpp"

#include <algorithm>
#include <cmath>

#include "core/error.hpp"

namespace ts {
namespace {

// P(Binomial(n, 1/2) <= j).
double binom_half_cdf(int n, int j) {
  double term = std::ldexp(1.0, -n), sum = 0;  // C(n, 0) / 2^n
  for (int i = 0; i <= j; ++i) {
    sum += term;
    term = term * (n - i) / (i + 1);
  }
  return sum;
}

// The order statistic k (1-based) of the sign-test interval, 0 when none.
int sign_k(int n, double confidence) {
  const double tail = (1.0 - confidence) / 2;
  int k = 0;
  while (k + 1 <= (n + 1) / 2 && binom_half_cdf(n, k) <= tail) ++k;
  return k;
}

// Regularised incomplete beta I_x(a, b) by its continued fraction (Lentz).
double betacf(double a, double b, double x) {
  const double eps = 1e-15, tiny = 1e-300;
  double qab = a + b, qap = a + 1, qam = a - 1, c = 1, d = 1 - qab * x / qap;
  if (std::fabs(d) < tiny) d = tiny;
  d = 1 / d;
  double h = d;
  for (int m = 1; m <= 500; ++m) {
    const int m2 = 2 * m;
    double aa = m * (b - m) * x / ((qam + m2) * (a + m2));
    d = 1 + aa * d;
    if (std::fabs(d) < tiny) d = tiny;
    c = 1 + aa / c;
    if (std::fabs(c) < tiny) c = tiny;
    d = 1 / d;
    h *= d * c;
    aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
    d = 1 + aa * d;
    if (std::fabs(d) < tiny) d = tiny;
    c = 1 + aa / c;
    if (std::fabs(c) < tiny) c = tiny;
    d = 1 / d;
    const double del = d * c;
    h *= del;
    if (std::fabs(del - 1) < eps) break;
  }
  return h;
}

double inc_beta(double a, double b, double x) {
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  const double lbt = std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) + a * std::log(x) + b * std::log1p(-x);
  if (x < (a + 1) / (a + b + 2)) return std::exp(lbt) * betacf(a, b, x) / a;
  return 1 - std::exp(lbt) * betacf(b, a, 1 - x) / b;
}

double student_t_cdf(double t, double df) {
  const double x = df / (df + t * t);
  const double tail = 0.5 * inc_beta(df / 2, 0.5, x);
  return t >= 0 ? 1 - tail : tail;
}

}  // namespace

int min_pairs_for(double confidence) {
  for (int n = 1; n <= 1000; ++n)
    if (sign_k(n, confidence) >= 1) return n;
  return 1001;
}

std::optional<Interval> sign_interval_paired(const std::vector<double>& ratios, double confidence) {
  for (double r : ratios)
    if (!std::isfinite(r) || r <= 0) throw InputError("speed interval: a ratio is not a positive finite number");
  const int n = static_cast<int>(ratios.size());
  const int k = sign_k(n, confidence);
  if (k < 1) return std::nullopt;
  std::vector<double> s = ratios;
  std::sort(s.begin(), s.end());
  Interval iv;
  iv.point = median_of(s);
  iv.lower = s[static_cast<size_t>(k - 1)];
  iv.upper = s[static_cast<size_t>(n - k)];
  iv.confidence = confidence;
  iv.samples = n;
  iv.method = "paired ratios, median, sign-test order statistics r(" + std::to_string(k) + ")..r(" +
              std::to_string(n + 1 - k) + ") (distribution-free)";
  return iv;
}

Interval welch_interval_runs(const std::vector<double>& base, const std::vector<double>& cand, double confidence) {
  if (base.size() < 2 || cand.size() < 2) throw InputError("speed interval: Welch's t needs two runs a side");
  auto logs = [](const std::vector<double>& v) {
    std::vector<double> out;
    for (double x : v) {
      if (!std::isfinite(x) || x <= 0) throw InputError("speed interval: a run median is not a positive finite number");
      out.push_back(std::log(x));
    }
    return out;
  };
  const auto lb = logs(base), lc = logs(cand);
  auto mean_var = [](const std::vector<double>& v) {
    double m = 0;
    for (double x : v) m += x;
    m /= static_cast<double>(v.size());
    double s = 0;
    for (double x : v) s += (x - m) * (x - m);
    return std::pair<double, double>{m, s / static_cast<double>(v.size() - 1)};
  };
  const auto [mb, vb] = mean_var(lb);
  const auto [mc, vc] = mean_var(lc);
  const double nb = static_cast<double>(lb.size()), nc = static_cast<double>(lc.size());
  const double se2 = vb / nb + vc / nc;
  const double diff = mb - mc;  // log(baseline / candidate)
  Interval iv;
  iv.point = std::exp(diff);
  iv.confidence = confidence;
  iv.samples = static_cast<int64_t>(lb.size() + lc.size());
  iv.method = "Welch's t on the log medians of " + std::to_string(lc.size()) + " and " + std::to_string(lb.size()) +
              " timing runs (run-to-run variance)";
  if (se2 <= 0) {
    iv.lower = iv.upper = iv.point;
    return iv;
  }
  const double df = se2 * se2 / ((vb / nb) * (vb / nb) / (nb - 1) + (vc / nc) * (vc / nc) / (nc - 1));
  const double t = student_t_quantile(0.5 + confidence / 2, df);
  iv.lower = std::exp(diff - t * std::sqrt(se2));
  iv.upper = std::exp(diff + t * std::sqrt(se2));
  return iv;
}

double student_t_quantile(double p, double df) {
  if (!(p > 0 && p < 1) || !(df > 0)) throw InputError("student_t_quantile: p in (0, 1) and df > 0");
  double lo = -1e6, hi = 1e6;
  for (int i = 0; i < 200; ++i) {
    const double mid = 0.5 * (lo + hi);
    (student_t_cdf(mid, df) < p ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

}  // namespace ts
