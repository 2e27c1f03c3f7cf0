#pragma once
// Element conversions (docs/emulation.md "Element conversions"), bit-exact.
// Rounding is done on the float32 bit pattern with integer arithmetic, so the
// result does not depend on the FPU rounding mode, on FMA contraction or on
// the compiler's handling of subnormals (only int8_rni_sat and the Triton
// recipe use float additions, which are exact or RNE in the default mode).
#include <cstdint>
#include <cstring>

#include "reference/numerics/host_device.hpp"

namespace ts::num {

namespace detail {

// memcpy rather than std::bit_cast: the CUDA mirrors compile these as C++17.
TS_HD inline uint32_t f2u(float x) {
  uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  return u;
}
TS_HD inline float u2f(uint32_t u) {
  float x;
  std::memcpy(&x, &u, sizeof x);
  return x;
}

// Shift m right by `shift` bits, rounding to nearest, ties to even.
TS_HD inline uint32_t shift_rne(uint32_t m, int shift) {
  if (shift <= 0) return m << -shift;
  if (shift >= 32) return 0;  // m < 2^24 <= half an output unit
  const uint32_t q = m >> shift;
  const uint32_t rem = m & ((1u << shift) - 1u);
  const uint32_t half = 1u << (shift - 1);
  // No branch: the remainder's bits are as good as random, and a branch on them mispredicted about every
  // other time (e4m3 encode and decode took 9.4 ns a value on one core, 5.3 without it; sage2's V quantization
  // at block24 ~1 s).
  return q + static_cast<uint32_t>((rem > half) | ((rem == half) & ((q & 1u) != 0)));
}

// Code (exponent field << M | mantissa) of the finite non-negative float with
// bits `a`, rounded RNE to a format with M mantissa bits and exponent bias B
// with subnormals and unbounded exponent range above: the caller saturates.
// A carry out of the mantissa moves into the exponent field, which is right.
template <int M, int B>
TS_HD inline uint32_t round_magnitude(uint32_t a) {
  constexpr int kMinNormalBiased = 127 + 1 - B;  // float exponent field of 2^(1-B)
  const int e = static_cast<int>(a >> 23);
  if (e >= kMinNormalBiased) {
    return shift_rne(a, 23 - M) - (static_cast<uint32_t>(127 - B) << M);
  }
  // Subnormal in the target: count units of 2^(1-B-M).
  const uint32_t m = (e == 0) ? (a & 0x7FFFFFu) : ((a & 0x7FFFFFu) | 0x800000u);
  const int e_eff = (e == 0) ? 1 : e;
  const int shift = 151 - B - M - e_eff;  // value = m * 2^(e_eff - 150)
  return shift_rne(m, shift);
}

}  // namespace detail

// ---------------------------------------------------------------- bf16
// RNE; overflow rounds to Inf as the carry reaches the exponent; NaN keeps its
// sign and top payload bits and is forced quiet (never collapses to Inf).
TS_HD inline uint16_t bf16_bits(float x) {
  const uint32_t u = detail::f2u(x);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((u >> 16) | 0x0040u);
  return static_cast<uint16_t>((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}
TS_HD inline float bf16_from_bits(uint16_t b) { return detail::u2f(static_cast<uint32_t>(b) << 16); }
TS_HD inline float bf16_round(float x) { return bf16_from_bits(bf16_bits(x)); }

// ---------------------------------------------------------------- fp16
// IEEE binary16 as __float2half_rn: RNE, subnormals, |x| >= 65520 -> Inf.
// NaN stays NaN (quiet, sign and top payload bits kept).
TS_HD inline uint16_t fp16_bits(float x) {
  const uint32_t u = detail::f2u(x);
  const uint32_t sign = (u >> 16) & 0x8000u;
  const uint32_t a = u & 0x7FFFFFFFu;
  if (a > 0x7F800000u) return static_cast<uint16_t>(sign | 0x7E00u | ((a >> 13) & 0x3FFu));
  if (a >= 0x477FF000u) return static_cast<uint16_t>(sign | 0x7C00u);  // 65520: tie goes up
  return static_cast<uint16_t>(sign | detail::round_magnitude<10, 15>(a));
}
TS_HD inline float fp16_from_bits(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t e = (h >> 10) & 0x1Fu;
  const uint32_t m = h & 0x3FFu;
  if (e == 0) {
    const float v = static_cast<float>(m) * 0x1p-24f;  // exact
    return detail::u2f(detail::f2u(v) | sign);
  }
  if (e == 31) return detail::u2f(sign | 0x7F800000u | (m << 13));
  return detail::u2f(sign | ((e + 112u) << 23) | (m << 13));
}
TS_HD inline float fp16_round(float x) { return fp16_from_bits(fp16_bits(x)); }

// ---------------------------------------------------------------- FP8 E4M3 (e4m3fn)
// As cvt.rn.satfinite.e4m3x2.f32: RNE, |x| > 448 (and +-Inf) -> +-448,
// NaN -> NaN code 0x7F with the input's sign (0xFF for negative NaN).
// Values in (448, 464) would round to 448 anyway; from 464 RNE would go to the
// non-existent 480, and satfinite turns that into 448 too.
TS_HD inline uint8_t e4m3_encode(float x) {
  const uint32_t u = detail::f2u(x);
  const uint32_t sign = (u >> 24) & 0x80u;
  const uint32_t a = u & 0x7FFFFFFFu;
  if (a > 0x7F800000u) return static_cast<uint8_t>(sign | 0x7Fu);
  if (a > 0x43E00000u) return static_cast<uint8_t>(sign | 0x7Eu);  // 448
  return static_cast<uint8_t>(sign | detail::round_magnitude<3, 7>(a));
}
TS_HD inline float e4m3_decode(uint8_t c) {
  const uint32_t sign = static_cast<uint32_t>(c & 0x80u) << 24;
  const uint32_t e = (c >> 3) & 0xFu;
  const uint32_t m = c & 0x7u;
  if (e == 15 && m == 7) return detail::u2f(sign | 0x7FC00000u);
  if (e == 0) {
    const float v = static_cast<float>(m) * 0x1p-9f;  // exact
    return detail::u2f(detail::f2u(v) | sign);
  }
  return detail::u2f(sign | ((e + 120u) << 23) | (m << 20));
}
TS_HD inline float e4m3_round(float x) { return e4m3_decode(e4m3_encode(x)); }

// ---------------------------------------------------------------- E2M1 (NVFP4 element)
// Codes 0..7 = {0, 0.5, 1, 1.5, 2, 3, 4, 6}, 8..15 their negatives. RNE,
// |x| > 6 (and +-Inf) -> +-6. E2M1 has no NaN: NaN input encodes as +6
// (code 0x7), the positive maximum, as CUDA's cuda_fp4.hpp host conversion
// does; docs/spec-deviations.md "E2M1 NaN input" records the choice.
// -0.0 and negative values that round to zero give code 0x8 (-0).
TS_HD inline uint8_t e2m1_encode(float x) {
  const uint32_t u = detail::f2u(x);
  const uint32_t a = u & 0x7FFFFFFFu;
  if (a > 0x7F800000u) return 0x7u;
  const uint32_t sign = (u >> 28) & 0x8u;
  if (a > 0x40C00000u) return static_cast<uint8_t>(sign | 0x7u);  // 6
  return static_cast<uint8_t>(sign | detail::round_magnitude<1, 1>(a));
}
// Arithmetic rather than a table, so that the device mirrors share it: m / 2
// below 2, then (2 + (m & 1)) * 2^(m / 2 - 2), all exact.
TS_HD inline float e2m1_decode(uint8_t c) {
  const uint32_t m = c & 0x7u;
  const float v = m < 4u ? 0.5f * static_cast<float>(m)
                         : static_cast<float>((2u + (m & 1u)) << ((m >> 1) - 2u));
  return (c & 0x8u) ? -v : v;
}
TS_HD inline float e2m1_round(float x) { return e2m1_decode(e2m1_encode(x)); }

// Two E2M1 codes per byte; element 2i in the low nibble, 2i+1 in the high one.
TS_HD inline uint8_t e2m1_pack(uint8_t lo, uint8_t hi) {
  return static_cast<uint8_t>((lo & 0xFu) | ((hi & 0xFu) << 4));
}
TS_HD inline uint8_t e2m1_unpack_lo(uint8_t byte) { return static_cast<uint8_t>(byte & 0xFu); }
TS_HD inline uint8_t e2m1_unpack_hi(uint8_t byte) { return static_cast<uint8_t>(byte >> 4); }
// Element i of a packed row.
TS_HD inline uint8_t e2m1_unpack(const uint8_t* packed, int64_t i) {
  const uint8_t byte = packed[i >> 1];
  return (i & 1) ? e2m1_unpack_hi(byte) : e2m1_unpack_lo(byte);
}

// ---------------------------------------------------------------- INT8
// cvt.rni.sat.s8.f32: nearest, ties to even, saturate to [-128, 127], NaN -> 0.
// Clamping first keeps |x| < 2^22, where adding and subtracting 1.5*2^23 is an
// exact RNE to an integer in the default rounding mode.
TS_HD inline int8_t int8_rni_sat(float x) {
  if (!(x == x)) return 0;
  if (x >= 127.0f) return 127;
  if (x <= -128.0f) return -128;
  constexpr float kMagic = 12582912.0f;  // 1.5 * 2^23
  const float r = (x + kMagic) - kMagic;
  return static_cast<int8_t>(static_cast<int>(r));
}

// SageAttention's Triton per_thread recipe: `x = x / scale;
// x += 0.5 * where(x >= 0, 1, -1); x.to(int8)`: the addition is a float32 RNE
// addition (so 0.49999997 + 0.5 rounds to 1.0 and becomes 1), then the
// conversion truncates toward zero; it saturates to [-128, 127] and NaN -> 0
// as the GPU's cvt.rzi.sat.s8.f32 does.
TS_HD inline int8_t int8_round_half_away_trunc(float x_div_scale) {
  if (!(x_div_scale == x_div_scale)) return 0;
  const float y = x_div_scale + (x_div_scale >= 0.0f ? 0.5f : -0.5f);
  if (y >= 127.0f) return 127;
  if (y <= -128.0f) return -128;
  return static_cast<int8_t>(static_cast<int>(y));  // C++ conversion truncates
}

}  // namespace ts::num
