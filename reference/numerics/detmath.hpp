#pragma once
// Deterministic elementary functions built only from IEEE basic operations
// (+, -, *, /, sqrt, nearbyint, ldexp/frexp). libm's exp/log/sin/cos may differ
// in the last bit between glibc versions and between FMA and non-FMA code
// paths; synthesis and the emulations must give the same bits on the CPU CI
// machine and the GPU machine, so they use these. Accuracy: within about one
// ulp of double for arguments in the ranges touchstone uses (|x| < 1e6 for
// sin/cos).
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "reference/numerics/host_device.hpp"

namespace ts::detmath {

namespace detail {
// ln 2 split so that k * kLn2Hi is exact for |k| < 2^11 (fdlibm's split).
inline constexpr double kLn2Hi = 6.93147180369123816490e-01;
inline constexpr double kLn2Lo = 1.90821492927058770002e-10;
inline constexpr double kInvLn2 = 1.44269504088896338700e+00;
inline constexpr double kLn2 = 0.693147180559945309417232121458;

// e^r for |r| <= 0.35: Taylor series to degree 14 (truncation < 1e-19).
// A template so that the exact reference's vector loops (exact_tiles.cpp) run
// the same operations lane by lane; the first step is r * (1/14!) + 1/13!.
template <class T>
TS_HD inline T exp_reduced(const T& r) {
  T p = r * (1.0 / 87178291200.0) + 1.0 / 6227020800.0;  // 1/14!, 1/13!
  p = p * r + 1.0 / 479001600.0;
  p = p * r + 1.0 / 39916800.0;
  p = p * r + 1.0 / 3628800.0;
  p = p * r + 1.0 / 362880.0;
  p = p * r + 1.0 / 40320.0;
  p = p * r + 1.0 / 5040.0;
  p = p * r + 1.0 / 720.0;
  p = p * r + 1.0 / 120.0;
  p = p * r + 1.0 / 24.0;
  p = p * r + 1.0 / 6.0;
  p = p * r + 0.5;
  p = p * r + 1.0;
  return p * r + 1.0;
}
}  // namespace detail

namespace detail {
// Rounds |t| < 2^51 to the nearest integer, ties to even, with two IEEE
// additions: cheaper than a call to nearbyint and the same result.
inline constexpr double kRoundMagic = 6755399441055744.0;  // 1.5 * 2^52
template <class T>
TS_HD inline T round_even(T t) {
  return (t + kRoundMagic) - kRoundMagic;
}
// 2^k for an integer-valued k in [-1022, 1023], built from its bits.
TS_HD inline double pow2i(double k) {
  const int64_t bits = (static_cast<int64_t>(k) + 1023) << 52;
  double out;
  std::memcpy(&out, &bits, sizeof out);
  return out;
}
}  // namespace detail

TS_HD inline double exp(double x) {
  if (x > -708.0 && x < 709.0) {  // result and 2^k both normal
    const double k = detail::round_even(x * detail::kInvLn2);
    const double r = (x - k * detail::kLn2Hi) - k * detail::kLn2Lo;
    return detail::exp_reduced(r) * detail::pow2i(k);
  }
  if (std::isnan(x)) return x;
  if (x >= 709.0) {
    if (x > 709.782712893384) return std::numeric_limits<double>::infinity();
    const double k = detail::round_even(x * detail::kInvLn2);
    const double r = (x - k * detail::kLn2Hi) - k * detail::kLn2Lo;
    return std::ldexp(detail::exp_reduced(r), static_cast<int>(k));
  }
  if (x < -745.2) return 0.0;
  const double k = detail::round_even(x * detail::kInvLn2);
  const double r = (x - k * detail::kLn2Hi) - k * detail::kLn2Lo;
  return std::ldexp(detail::exp_reduced(r), static_cast<int>(k));  // subnormal result
}

TS_HD inline double exp2(double x) {
  if (std::isnan(x)) return x;
  if (x >= 1024.0) return std::numeric_limits<double>::infinity();
  if (x < -1075.0) return 0.0;
  const double k = detail::round_even(x);
  const double f = x - k;  // exact, |f| <= 0.5
  const double p = detail::exp_reduced(f * detail::kLn2);
  if (k > -1022.0 && k < 1024.0) return p * detail::pow2i(k);
  return std::ldexp(p, static_cast<int>(k));
}

inline double log(double x) {
  if (std::isnan(x) || x < 0) return std::numeric_limits<double>::quiet_NaN();
  if (x == 0) return -std::numeric_limits<double>::infinity();
  if (std::isinf(x)) return x;
  int e = 0;
  double m = std::frexp(x, &e);  // x = m * 2^e, m in [0.5, 1)
  if (m < 0.70710678118654752440) {
    m *= 2.0;
    e -= 1;
  }
  // log(m) = 2 atanh(s), s = (m-1)/(m+1), |s| <= 0.1716: odd series to s^27.
  const double s = (m - 1.0) / (m + 1.0);
  const double s2 = s * s;
  double p = 1.0 / 27.0;
  for (int n = 25; n >= 3; n -= 2) p = p * s2 + 1.0 / n;
  const double log_m = 2.0 * s + 2.0 * s * s2 * p;
  const double de = static_cast<double>(e);
  return de * detail::kLn2Hi + (de * detail::kLn2Lo + log_m);
}

// Error grows with |exponent * log(base)| (about that many ulps); RoPE's
// theta^(-i/F) stays within ~10 ulps, far below anything a bf16 tensor sees.
inline double pow(double base, double exponent) {
  if (exponent == 0) return 1.0;
  if (base == 1.0) return 1.0;
  if (!(base > 0)) return std::numeric_limits<double>::quiet_NaN();  // only positive bases are used
  return exp(exponent * log(base));
}

namespace detail {
// pi/2 in three 33-bit pieces (fdlibm), so k * piece is exact for |k| < 2^20.
inline constexpr double kPio2_1 = 1.57079632673412561417e+00;
inline constexpr double kPio2_2 = 6.07710050630396597660e-11;
inline constexpr double kPio2_3 = 2.02226624871116645580e-21;
inline constexpr double kPio2_3t = 8.47842766036889956997e-32;
inline constexpr double kTwoOverPi = 6.36619772367581382433e-01;

// sin and cos on |r| <= pi/4 by Taylor series (truncation < 1e-18).
inline double sin_reduced(double r) {
  const double r2 = r * r;
  double p = -1.0 / 1307674368000.0;  // -1/15!
  p = p * r2 + 1.0 / 6227020800.0;
  p = p * r2 - 1.0 / 39916800.0;
  p = p * r2 + 1.0 / 362880.0;
  p = p * r2 - 1.0 / 5040.0;
  p = p * r2 + 1.0 / 120.0;
  p = p * r2 - 1.0 / 6.0;
  return r + r * r2 * p;
}
inline double cos_reduced(double r) {
  const double r2 = r * r;
  double p = 1.0 / 20922789888000.0;  // 1/16!
  p = p * r2 - 1.0 / 87178291200.0;
  p = p * r2 + 1.0 / 479001600.0;
  p = p * r2 - 1.0 / 3628800.0;
  p = p * r2 + 1.0 / 40320.0;
  p = p * r2 - 1.0 / 720.0;
  p = p * r2 + 1.0 / 24.0;
  return 1.0 - 0.5 * r2 + r2 * r2 * p;
}
}  // namespace detail

// sin and cos of x together; quadrant from the nearest multiple of pi/2.
inline void sincos(double x, double* s, double* c) {
  if (!std::isfinite(x)) {
    *s = *c = std::numeric_limits<double>::quiet_NaN();
    return;
  }
  const double k = std::nearbyint(x * detail::kTwoOverPi);
  const double r = ((x - k * detail::kPio2_1) - k * detail::kPio2_2) -
                   (k * detail::kPio2_3 + k * detail::kPio2_3t);
  const double sr = detail::sin_reduced(r), cr = detail::cos_reduced(r);
  long long q = static_cast<long long>(k) & 3;
  switch (q) {
    case 0: *s = sr; *c = cr; break;
    case 1: *s = cr; *c = -sr; break;
    case 2: *s = -sr; *c = -cr; break;
    default: *s = -cr; *c = sr; break;
  }
}
inline double sin(double x) { double s, c; sincos(x, &s, &c); return s; }
inline double cos(double x) { double s, c; sincos(x, &s, &c); return c; }

}  // namespace ts::detmath
