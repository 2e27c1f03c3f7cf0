#pragma once
// The float32 and fp16 arithmetic of the sage2 kernel's softmax and P·V
// (docs/emulation.md "sage2": online softmax, P·V, finish), shared by the
// host emulation and its CUDA mirror so that both give the same bits (the .cu files build with -fmad=false).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "reference/numerics/convert.hpp"
#include "reference/numerics/detmath.hpp"
#include "reference/numerics/host_device.hpp"

namespace ts::sage2 {

// Offset that keeps P = exp2(s - m) <= 2^8.807 < 448, the FP8 E4M3 maximum.
inline constexpr float kFp8Offset = 8.807f;
inline constexpr float kInitialMax = -5e6f;
// Keys per MMA step (m16n8k32): the unit of the P·V partial sums.
inline constexpr int64_t kPvChunk = 32;

// float32 exp2 of a float32 argument. The kernel uses ex2.approx.ftz.f32,
// which no document defines bit for bit; this is the correctly rounded value
// (detmath is within an ulp of double), and the tests' tolerances cover the
// difference (ex2.approx has a relative error of about 2^-22).
TS_HD inline float exp2f_det(float x) { return static_cast<float>(detmath::exp2(static_cast<double>(x))); }

// The pieces of softmax_step that the tensor-core mirror (reference/cuda/sage2_tc.cu)
// spreads over threads: the new running max from the old one and the key block's
// maximum score, and one key's P = exp2(s - m_new) before FP8 rounding.
TS_HD inline float softmax_new_max(float m, float rowmax) { return std::max(m, rowmax - kFp8Offset); }
TS_HD inline float softmax_p(float s, float m_new) { return exp2f_det(s - m_new); }

// One row's online-softmax step over a key block of nk scores s (steps 4-5):
// updates the running max m and the denominator den (summing the float32 P
// before FP8 rounding, in key order), writes P to p (E4M3-rounded when
// round_p; p may be s itself) and returns the factor by which the running
// output is rescaled.
TS_HD inline float softmax_step(const float* s, float* p, int64_t nk, float& m, float& den, bool round_p) {
  float rowmax = -std::numeric_limits<float>::infinity();
  for (int64_t j = 0; j < nk; ++j) rowmax = std::max(rowmax, s[j]);
  const float m_new = softmax_new_max(m, rowmax);
  const float oscale = exp2f_det(m - m_new);
  m = m_new;
  float lsum = 0.0f;
  for (int64_t j = 0; j < nk; ++j) {
    const float pj = softmax_p(s[j], m_new);
    lsum += pj;
    p[j] = round_p ? num::e4m3_round(pj) : pj;
  }
  den = den * oscale + lsum;
  return oscale;
}

// Step 7's normalisation: the kernel multiplies each output by rcp.approx(den)
// (normalize_d), not a division; the correctly rounded reciprocal stands in
// for rcp.approx (docs/emulation.md "Division on the GPU").
TS_HD inline float normalize(float acc, float den) { return acc * (1.0f / den); }

// Correctly rounded float32 of the exact sum a + b (both float64): TwoSum
// decides the rare halfway case that a plain (float)(a + b) could round twice.
TS_HD inline float f32_of_sum(double a, double b) {
  const double s = a + b;
  const double bb = s - a;
  const double err = (a - (s - bb)) + (b - bb);
  const float f = static_cast<float>(s);
  if (err == 0.0 || static_cast<double>(f) == s || !std::isfinite(f)) return f;
  // s is not a float; only when it lies exactly halfway between two floats can
  // the rounding of a + b to float64 have moved the result across the tie.
  const float other = s > static_cast<double>(f)
                          ? std::nextafter(f, std::numeric_limits<float>::infinity())
                          : std::nextafter(f, -std::numeric_limits<float>::infinity());
  const double mid = (static_cast<double>(f) + static_cast<double>(other)) * 0.5;
  if (s != mid) return f;
  return err > 0 ? std::max(f, other) : std::min(f, other);
}

// Correctly rounded fp16 of a float64 (RNE, overflow to Inf as __float2half_rn).
TS_HD inline float fp16_of_double(double x) {
  // RNE at fp16's unit in the last place by the add-and-subtract trick in
  // float64: c = 1.5 * 2^(e+42) puts x + c in a binade whose spacing is
  // exactly fp16's 2^(e-10) for |x| in [2^e, 2^(e+1)) (2^-24 below 2^-14,
  // fp16's subnormal step), so (x + c) - c is x correctly rounded, once.
  if (std::isnan(x)) return std::numeric_limits<float>::quiet_NaN();
  uint64_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  int e = static_cast<int>((bits >> 52) & 0x7FF) - 1023;
  if (e > 15) return x > 0 ? std::numeric_limits<float>::infinity()
                           : -std::numeric_limits<float>::infinity();
  if (e < -14) e = -14;
  const uint64_t cbits = (static_cast<uint64_t>(e + 42 + 1023) << 52) | (uint64_t{1} << 51);
  double c;
  std::memcpy(&c, &cbits, sizeof c);
  const double r = (x + c) - c;
  if (r > 65504.0) return std::numeric_limits<float>::infinity();
  if (r < -65504.0) return -std::numeric_limits<float>::infinity();
  return static_cast<float>(r);  // at most 11 significant bits: exact
}

}  // namespace ts::sage2
