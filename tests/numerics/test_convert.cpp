// Element conversions (numerics.md "Element conversions") against the slow
// table reference of format_reference.hpp: every code, every midpoint between
// neighbours (and one float either side of it), and sweeps of float32 bit
// patterns. A ties-away-from-zero rounding fails the "midpoints" test of each
// format (half of the midpoints have an even lower neighbour).
#include <cmath>
#include <cstdint>
#include <limits>

#include "catch.hpp"
#include "numerics/format_reference.hpp"
#include "reference/numerics/convert.hpp"

using namespace ts::num;
using ts::test::bits_of;
using ts::test::float_from_bits;
using ts::test::FormatTable;

namespace {

enum class Fmt { bf16, fp16, e4m3, e2m1 };

const FormatTable& table_of(Fmt f) {
  switch (f) {
    case Fmt::bf16: return ts::test::bf16_table();
    case Fmt::fp16: return ts::test::fp16_table();
    case Fmt::e4m3: return ts::test::e4m3_table();
    case Fmt::e2m1: return ts::test::e2m1_table();
  }
  return ts::test::bf16_table();
}

uint32_t encode(Fmt f, float x) {
  switch (f) {
    case Fmt::bf16: return bf16_bits(x);
    case Fmt::fp16: return fp16_bits(x);
    case Fmt::e4m3: return e4m3_encode(x);
    case Fmt::e2m1: return e2m1_encode(x);
  }
  return 0;
}

float round_to(Fmt f, float x) {
  switch (f) {
    case Fmt::bf16: return bf16_round(x);
    case Fmt::fp16: return fp16_round(x);
    case Fmt::e4m3: return e4m3_round(x);
    case Fmt::e2m1: return e2m1_round(x);
  }
  return 0.0f;
}

// Value of a code from the reference table (NaN codes handled by the caller).
double table_value(Fmt f, uint32_t code) {
  const FormatTable& t = table_of(f);
  const bool neg = (code >> t.sign_shift) & 1u;
  const uint32_t m = code & ((1u << t.sign_shift) - 1u);
  if (m > t.max_code) return neg ? -INFINITY : INFINITY;  // Inf of bf16/fp16
  const double v = t.mag[m];
  return neg ? -v : v;
}

// Checks one finite float against the reference; returns false on mismatch.
bool matches_reference(Fmt f, float x) {
  const uint32_t want = table_of(f).encode_finite(x);
  const uint32_t got = encode(f, x);
  if (got != want) return false;
  const float r = round_to(f, x);
  const double v = table_value(f, want);
  return static_cast<double>(r) == v && std::signbit(r) == std::signbit(v);
}

// Expected code for a NaN input.
bool nan_ok(Fmt f, float x) {
  const bool neg = std::signbit(x);
  switch (f) {
    case Fmt::bf16: return std::isnan(bf16_round(x)) && (bf16_bits(x) & 0x0040u) && (((bf16_bits(x) >> 15) & 1u) == neg);
    case Fmt::fp16: return std::isnan(fp16_round(x)) && (fp16_bits(x) & 0x0200u) && (((fp16_bits(x) >> 15) & 1u) == neg);
    case Fmt::e4m3: return e4m3_encode(x) == (neg ? 0xFFu : 0x7Fu) && std::isnan(e4m3_round(x));
    case Fmt::e2m1: return e2m1_encode(x) == 0x7u && e2m1_round(x) == 6.0f;
  }
  return false;
}

// Every midpoint between neighbouring magnitudes (including the one past the
// largest value, where bf16/fp16 overflow and e4m3/e2m1 saturate), exactly,
// and the float just above and just below it, with both signs.
void check_midpoints(Fmt f) {
  const FormatTable& t = table_of(f);
  int64_t checked = 0, bad = 0;
  for (uint32_t c = 0; c <= t.max_code; ++c) {
    const double mid = 0.5 * (t.mag[c] + t.mag[c + 1]);
    const float m = static_cast<float>(mid);
    REQUIRE(static_cast<double>(m) == mid);  // midpoints are floats
    const uint32_t even = (c % 2 == 0) ? c : c + 1;
    const uint32_t sat = [&](uint32_t k) { return (k > t.max_code && !t.overflow_to_inf) ? t.max_code : k; }(even);
    const uint32_t above = (c + 1 > t.max_code && !t.overflow_to_inf) ? t.max_code : c + 1;
    const float up = std::nextafter(m, INFINITY), down = std::nextafter(m, 0.0f);
    for (int s = 0; s < 2; ++s) {
      const uint32_t sign = s ? (1u << t.sign_shift) : 0u;
      const float k = s ? -1.0f : 1.0f;
      const uint32_t got_mid = encode(f, k * m), got_up = encode(f, k * up), got_down = encode(f, k * down);
      if (got_mid != (sign | sat) || got_up != (sign | above) || got_down != (sign | c)) {
        if (bad < 5) {
          INFO("midpoint " << mid << " between codes " << c << " and " << c + 1 << " sign " << s << ": got " << got_mid
                           << " / " << got_up << " / " << got_down);
          CHECK(false);
        }
        ++bad;
      }
      checked += 3;
    }
  }
  INFO("midpoint inputs checked: " << checked);
  CHECK(bad == 0);
  CHECK(checked > 0);
}

// Float32 bit patterns from `first` with a fixed stride; NaNs by their rule.
void sweep(Fmt f, uint64_t first, uint64_t last, uint64_t stride, int64_t min_count) {
  int64_t n = 0, bad = 0;
  for (uint64_t u = first; u <= last; u += stride) {
    const float x = float_from_bits(static_cast<uint32_t>(u));
    const bool ok = std::isnan(x) ? nan_ok(f, x) : matches_reference(f, x);
    if (!ok) {
      if (bad < 5) {
        INFO("input bits 0x" << std::hex << u << std::dec << " value " << x << " got code " << encode(f, x)
                             << " want " << (std::isnan(x) ? 0u : table_of(f).encode_finite(x)));
        CHECK(false);
      }
      ++bad;
    }
    ++n;
  }
  INFO("swept " << n << " inputs");
  CHECK(bad == 0);
  CHECK(n >= min_count);
}

}  // namespace

TEST_CASE("reference tables have the documented extremes", "[convert]") {
  CHECK(ts::test::e4m3_table().mag[0x7E] == 448.0);
  CHECK(ts::test::e4m3_table().mag[1] == std::ldexp(1.0, -9));
  CHECK(ts::test::e4m3_table().mag[8] == std::ldexp(1.0, -6));
  CHECK(ts::test::e2m1_table().mag[7] == 6.0);
  CHECK(ts::test::fp16_table().mag[0x7BFF] == 65504.0);
  CHECK(ts::test::fp16_table().mag[1] == std::ldexp(1.0, -24));
  CHECK(ts::test::bf16_table().mag[0x7F7F] == static_cast<double>(float_from_bits(0x7F7F0000u)));
}

TEST_CASE("e4m3: all 256 codes decode and round-trip", "[convert][e4m3]") {
  for (uint32_t c = 0; c < 256; ++c) {
    INFO("code " << c);
    const float v = e4m3_decode(static_cast<uint8_t>(c));
    if ((c & 0x7Fu) == 0x7Fu) {
      CHECK(std::isnan(v));
      CHECK(e4m3_encode(v) == c);  // NaN keeps its sign: 0x7F / 0xFF
      continue;
    }
    CHECK(static_cast<double>(v) == table_value(Fmt::e4m3, c));
    CHECK(std::signbit(v) == ((c & 0x80u) != 0));
    CHECK(e4m3_encode(v) == c);
  }
  CHECK(e4m3_encode(0.0f) == 0x00);
  CHECK(e4m3_encode(-0.0f) == 0x80);
}

TEST_CASE("e4m3: midpoints, saturation and subnormal ties", "[convert][e4m3]") {
  check_midpoints(Fmt::e4m3);
  // Between 448 and 464 RNE gives 448; from 464 on it would give the missing
  // 480, which satfinite turns into 448; Inf too.
  for (float x : {448.0f, 449.0f, 463.99f, 464.0f, 470.0f, 480.0f, 1e6f, 3.4e38f, INFINITY}) {
    INFO(x);
    CHECK(e4m3_encode(x) == 0x7E);
    CHECK(e4m3_encode(-x) == 0xFE);
  }
  CHECK(e4m3_encode(std::ldexp(1.0f, -10)) == 0x00);          // tie 0 | 2^-9 -> 0
  CHECK(e4m3_encode(std::ldexp(3.0f, -10)) == 0x02);          // tie 1 | 2 (x 2^-9) -> 2
  CHECK(e4m3_encode(std::ldexp(5.0f, -10)) == 0x02);          // tie 2 | 3 -> 2
  CHECK(e4m3_encode(std::ldexp(15.0f, -10)) == 0x08);         // tie 7 x 2^-9 | 2^-6 -> 2^-6 (even)
  CHECK(e4m3_encode(std::nextafter(std::ldexp(1.0f, -10), 1.0f)) == 0x01);
  CHECK(e4m3_encode(-std::ldexp(1.0f, -11)) == 0x80);         // underflows to -0
  CHECK(e4m3_encode(1.0625f) == 0x38);                        // tie 1 | 1.125 -> 1
  CHECK(e4m3_encode(1.1875f) == 0x3A);                        // tie 1.125 | 1.25 -> 1.25
  CHECK(std::isnan(e4m3_round(std::numeric_limits<float>::quiet_NaN())));
  CHECK(e4m3_encode(-std::numeric_limits<float>::quiet_NaN()) == 0xFF);
}

TEST_CASE("e4m3: float32 sweeps against the table reference", "[convert][e4m3]") {
  sweep(Fmt::e4m3, 0, 0xFFFFFFFFull, 1021, 4000000);  // every 1021st bit pattern, NaN and Inf included
  // Dense: one float in 13 over [2^-10, 500], both signs.
  const uint64_t lo = bits_of(std::ldexp(1.0f, -10)), hi = bits_of(500.0f);
  sweep(Fmt::e4m3, lo, hi, 13, 10000000);
  sweep(Fmt::e4m3, lo | 0x80000000ull, hi | 0x80000000ull, 131, 1000000);
  // Every float below 2^-10 down to 2^-20 (the subnormal range and its ties).
  sweep(Fmt::e4m3, bits_of(std::ldexp(1.0f, -20)), lo, 7, 1000000);
}

TEST_CASE("e2m1: codes, every tie and saturation", "[convert][e2m1]") {
  const float mags[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
  for (uint32_t c = 0; c < 16; ++c) {
    const float v = e2m1_decode(static_cast<uint8_t>(c));
    CHECK(v == ((c & 8u) ? -mags[c & 7u] : mags[c & 7u]));
    CHECK(std::signbit(v) == ((c & 8u) != 0));
    CHECK(e2m1_encode(v) == c);
  }
  struct Tie { float x; float want; };
  for (Tie t : {Tie{0.25f, 0.0f}, Tie{0.75f, 1.0f}, Tie{1.25f, 1.0f}, Tie{1.75f, 2.0f}, Tie{2.5f, 2.0f},
                Tie{3.5f, 4.0f}, Tie{5.0f, 4.0f}, Tie{7.0f, 6.0f}, Tie{6.5f, 6.0f}, Tie{1e30f, 6.0f},
                Tie{INFINITY, 6.0f}, Tie{0.2499f, 0.0f}, Tie{0.2501f, 0.5f}, Tie{4.999f, 4.0f}, Tie{5.001f, 6.0f}}) {
    INFO(t.x);
    CHECK(e2m1_round(t.x) == t.want);
    CHECK(e2m1_round(-t.x) == -t.want);
  }
  CHECK(e2m1_encode(-0.0f) == 0x8);
  CHECK(e2m1_encode(-0.1f) == 0x8);
  CHECK(e2m1_encode(std::numeric_limits<float>::quiet_NaN()) == 0x7);  // +MAXNORM, as cuda_fp4.h
  CHECK(e2m1_encode(-std::numeric_limits<float>::quiet_NaN()) == 0x7);
  check_midpoints(Fmt::e2m1);
  sweep(Fmt::e2m1, 0, 0xFFFFFFFFull, 1021, 4000000);
  sweep(Fmt::e2m1, bits_of(0.01f), bits_of(10.0f), 61, 1000000);
}

TEST_CASE("e2m1: packing puts element 2i in the low nibble", "[convert][e2m1]") {
  const uint8_t b = e2m1_pack(0x3, 0xC);
  CHECK(b == 0xC3);
  CHECK(e2m1_unpack_lo(b) == 0x3);
  CHECK(e2m1_unpack_hi(b) == 0xC);
  const uint8_t row[2] = {e2m1_pack(1, 2), e2m1_pack(9, 15)};
  CHECK(e2m1_unpack(row, 0) == 1);
  CHECK(e2m1_unpack(row, 1) == 2);
  CHECK(e2m1_unpack(row, 2) == 9);
  CHECK(e2m1_unpack(row, 3) == 15);
  CHECK(e2m1_pack(0x13, 0x24) == 0x43);  // high bits of each argument are dropped
}

TEST_CASE("fp16: all codes, midpoints, overflow and sweeps", "[convert][fp16]") {
  for (uint32_t h = 0; h < 65536; ++h) {
    const float v = fp16_from_bits(static_cast<uint16_t>(h));
    if ((h & 0x7C00u) == 0x7C00u && (h & 0x3FFu)) {
      REQUIRE(std::isnan(v));
      REQUIRE(fp16_bits(v) == (h | 0x200u));  // quiet, payload and sign kept
      continue;
    }
    REQUIRE(static_cast<double>(v) == table_value(Fmt::fp16, h));
    REQUIRE(fp16_bits(v) == h);
  }
  check_midpoints(Fmt::fp16);
  CHECK(fp16_bits(65504.0f) == 0x7BFF);
  CHECK(fp16_bits(65519.996f) == 0x7BFF);
  CHECK(fp16_bits(65520.0f) == 0x7C00);   // the tie rounds to even: Inf
  CHECK(fp16_bits(-1e10f) == 0xFC00);
  CHECK(fp16_bits(std::ldexp(1.0f, -25)) == 0x0000);                             // tie 0 | 2^-24
  CHECK(fp16_bits(std::nextafter(std::ldexp(1.0f, -25), 1.0f)) == 0x0001);
  CHECK(fp16_bits(std::ldexp(3.0f, -25)) == 0x0002);                             // tie 1 | 2 -> 2
  CHECK(fp16_bits(-0.0f) == 0x8000);
  sweep(Fmt::fp16, 0, 0xFFFFFFFFull, 1021, 4000000);
  sweep(Fmt::fp16, bits_of(std::ldexp(1.0f, -26)), bits_of(70000.0f), 83, 4000000);
}

#if defined(__FLT16_MANT_DIG__) && defined(__x86_64__)
TEST_CASE("fp16: agrees with the compiler's _Float16 conversion", "[convert][fp16]") {
  int64_t n = 0, bad = 0;
  for (uint64_t u = 0; u <= 0xFFFFFFFFull; u += 4093) {
    const float x = float_from_bits(static_cast<uint32_t>(u));
    if (std::isnan(x)) continue;
    const _Float16 h = static_cast<_Float16>(x);
    const uint16_t hb = std::bit_cast<uint16_t>(h);
    if (hb != fp16_bits(x)) ++bad;
    ++n;
  }
  INFO("compared " << n);
  CHECK(bad == 0);
  CHECK(n > 1000000);
}
#endif

TEST_CASE("bf16: all codes, midpoints, overflow, NaN and sweeps", "[convert][bf16]") {
  for (uint32_t b = 0; b < 65536; ++b) {
    const float v = bf16_from_bits(static_cast<uint16_t>(b));
    REQUIRE(bits_of(v) == (b << 16));
    if (std::isnan(v)) {
      REQUIRE(bf16_bits(v) == (b | 0x40u));
      continue;
    }
    REQUIRE(bf16_bits(v) == b);
  }
  check_midpoints(Fmt::bf16);
  CHECK(bf16_bits(3.4028235e38f) == 0x7F80);  // FLT_MAX is past the last midpoint: Inf
  CHECK(bf16_bits(-INFINITY) == 0xFF80);
  CHECK(bf16_bits(1.00390625f) == 0x3F80);    // tie 1 | 1 + 2^-7 -> 1
  CHECK(bf16_bits(1.01171875f) == 0x3F82);    // tie (1 + 2^-7) | (1 + 2^-6) -> even
  // A NaN whose payload lives only in the low 16 bits must not become Inf.
  CHECK(std::isnan(bf16_round(float_from_bits(0x7F800001u))));
  CHECK(bf16_bits(float_from_bits(0xFF800001u)) == 0xFFC0);
  sweep(Fmt::bf16, 0, 0xFFFFFFFFull, 1021, 4000000);
}

TEST_CASE("int8: cvt.rni.sat ties to even, saturates, NaN -> 0", "[convert][int8]") {
  struct Case { float x; int want; };
  for (Case c : {Case{0.5f, 0}, Case{1.5f, 2}, Case{2.5f, 2}, Case{3.5f, 4}, Case{-0.5f, 0}, Case{-1.5f, -2},
                 Case{-2.5f, -2}, Case{0.49999997f, 0}, Case{0.50000006f, 1}, Case{126.5f, 126}, Case{127.5f, 127},
                 Case{127.49f, 127}, Case{128.0f, 127}, Case{1e9f, 127}, Case{INFINITY, 127}, Case{-127.5f, -128},
                 Case{-128.5f, -128}, Case{-129.0f, -128}, Case{-INFINITY, -128}, Case{-0.0f, 0}, Case{1e-30f, 0}}) {
    INFO(c.x);
    CHECK(int8_rni_sat(c.x) == c.want);
  }
  CHECK(int8_rni_sat(std::numeric_limits<float>::quiet_NaN()) == 0);
  // Sweep [-130, 130] on a grid of 1/64 (all ties included) against an
  // independent reference built from floor() and an exact comparison.
  int bad = 0;
  for (int i = -130 * 64; i <= 130 * 64; ++i) {
    const float x = static_cast<float>(i) / 64.0f;
    const double fl = std::floor(static_cast<double>(x)), frac = static_cast<double>(x) - fl;
    double r = (frac < 0.5) ? fl : (frac > 0.5) ? fl + 1 : (std::fmod(fl, 2.0) == 0.0 ? fl : fl + 1);
    r = std::min(127.0, std::max(-128.0, r));
    if (int8_rni_sat(x) != static_cast<int>(r)) ++bad;
  }
  CHECK(bad == 0);
}

TEST_CASE("int8: Triton per_thread recipe rounds half away from zero", "[convert][int8]") {
  struct Case { float x; int want; };
  for (Case c : {Case{0.5f, 1}, Case{1.5f, 2}, Case{2.5f, 3}, Case{-0.5f, -1}, Case{-1.5f, -2}, Case{-2.5f, -3},
                 Case{0.4f, 0}, Case{-0.4f, 0}, Case{0.0f, 0}, Case{-0.0f, 0}, Case{126.5f, 127}, Case{126.49f, 126},
                 Case{127.0f, 127}, Case{300.0f, 127}, Case{-127.6f, -128}, Case{-300.0f, -128}}) {
    INFO(c.x);
    CHECK(int8_round_half_away_trunc(c.x) == c.want);
  }
  // The float32 addition rounds first: 0.49999997 + 0.5 is a tie between
  // 1 - 2^-24 and 1, which goes to 1.0, so the code is 1 (not 0).
  CHECK(int8_round_half_away_trunc(0.49999997f) == 1);
  CHECK(int8_round_half_away_trunc(-0.49999997f) == -1);
  CHECK(int8_round_half_away_trunc(std::numeric_limits<float>::quiet_NaN()) == 0);
  // Grid sweep against trunc(float(x +- 0.5)) clamped.
  int bad = 0;
  for (int i = -130 * 64; i <= 130 * 64; ++i) {
    const float x = static_cast<float>(i) / 64.0f;
    const float y = x >= 0.0f ? x + 0.5f : x - 0.5f;
    const double r = std::min(127.0, std::max(-128.0, std::trunc(static_cast<double>(y))));
    if (int8_round_half_away_trunc(x) != static_cast<int>(r)) ++bad;
  }
  CHECK(bad == 0);
}
