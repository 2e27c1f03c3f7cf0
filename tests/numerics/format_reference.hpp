#pragma once
// Slow, independent reference for the element conversions: every format's
// non-negative values are tabulated from their definition (sign, exponent,
// mantissa, bias) with std::ldexp, and a float is rounded by locating it in
// the table and comparing with the midpoint exactly; a tie goes to the even
// code. Shares no code with reference/numerics/convert.hpp.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

namespace ts::test {

struct FormatTable {
  int mant_bits = 0;
  int bias = 0;
  uint32_t max_code = 0;     // largest finite magnitude code
  bool overflow_to_inf = false;  // true: beyond the last midpoint -> Inf (code max_code + 1)
  int sign_shift = 0;        // position of the sign bit in the code
  std::vector<double> mag;   // mag[c] for c = 0 .. max_code + 1 (the last is virtual)

  double decode_magnitude(uint32_t c) const {
    const uint32_t e = c >> mant_bits;
    const uint32_t m = c & ((1u << mant_bits) - 1u);
    if (e == 0) return std::ldexp(static_cast<double>(m), 1 - bias - mant_bits);
    return std::ldexp(static_cast<double>((1u << mant_bits) + m), static_cast<int>(e) - bias - mant_bits);
  }

  FormatTable(int mant, int b, uint32_t maxc, bool inf, int sshift)
      : mant_bits(mant), bias(b), max_code(maxc), overflow_to_inf(inf), sign_shift(sshift) {
    for (uint32_t c = 0; c <= max_code + 1; ++c) mag.push_back(decode_magnitude(c));
  }

  // Magnitude code of |x| (finite) rounded to nearest, ties to the even code;
  // a result of max_code + 1 means "past the largest value".
  uint32_t round_magnitude(double a) const {
    if (a >= mag.back()) return max_code + 1;
    // First entry greater than a; its predecessor is <= a.
    const auto it = std::upper_bound(mag.begin(), mag.end(), a);
    const uint32_t hi = static_cast<uint32_t>(it - mag.begin());
    const uint32_t lo = hi - 1;
    if (mag[lo] == a) return lo;
    const double twice = 2.0 * a, mid2 = mag[lo] + mag[hi];  // both exact in double
    if (twice < mid2) return lo;
    if (twice > mid2) return hi;
    return (lo % 2 == 0) ? lo : hi;
  }

  // Full code of a finite float: sign bit plus the rounded magnitude, which
  // saturates to max_code unless the format overflows to Inf.
  uint32_t encode_finite(float x) const {
    const double a = std::fabs(static_cast<double>(x));
    uint32_t m = round_magnitude(a);
    if (m > max_code && !overflow_to_inf) m = max_code;
    const uint32_t s = std::signbit(x) ? (1u << sign_shift) : 0u;
    return s | m;
  }
};

inline const FormatTable& e4m3_table() {
  static const FormatTable t(3, 7, 0x7E, false, 7);
  return t;
}
inline const FormatTable& e2m1_table() {
  static const FormatTable t(1, 1, 0x7, false, 3);
  return t;
}
inline const FormatTable& fp16_table() {
  static const FormatTable t(10, 15, 0x7BFF, true, 15);
  return t;
}
inline const FormatTable& bf16_table() {
  static const FormatTable t(7, 127, 0x7F7F, true, 15);
  return t;
}

inline float float_from_bits(uint32_t u) { return std::bit_cast<float>(u); }
inline uint32_t bits_of(float x) { return std::bit_cast<uint32_t>(x); }

}  // namespace ts::test
