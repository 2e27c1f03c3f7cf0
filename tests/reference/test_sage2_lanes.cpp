// The sage2 emulation's vector loops (reference/sage2_lanes.cpp) give the
// bits of the scalar functions the CUDA mirror shares (sage2_arith.hpp), on
// every path this CPU can run: the softmax step, both accumulators, and the
// E4M3 rounding and exp2 lanes under them (exhaustively over all 2^32 floats
// once, 2026-12-03: equal but for signalling NaN inputs to exp2).
#pragma GCC diagnostic ignored "-Wpsabi"

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "catch.hpp"
#include "reference/lanes.hpp"
#include "reference/numerics/convert.hpp"
#include "reference/sage2_arith.hpp"
#include "reference/sage2_lanes.hpp"

using namespace ts;

namespace {

template <class T>
bool same_bits(T a, T b) {
  return std::memcmp(&a, &b, sizeof a) == 0;
}

float from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

constexpr float kInf = std::numeric_limits<float>::infinity();

}  // namespace

TEST_CASE("E4M3 rounding and exp2 lanes give the scalar bits") {
  // A stride through every float bit pattern, and the neighbours of E4M3's
  // boundaries and ties.
  std::vector<float> xs;
  for (uint64_t u = 0; u < (uint64_t{1} << 32); u += 65521) xs.push_back(from_bits(static_cast<uint32_t>(u)));
  for (float edge : {0x1p-6f, 448.0f, 464.0f, 0x1p-9f, 0x1p-10f, 3 * 0x1p-10f, 1.0625f, 240.0f, 1e-30f, kInf})
    for (float sign : {1.0f, -1.0f}) {
      float x = edge * sign;
      for (int i = 0; i < 40; ++i, x = std::nextafter(x, 0.0f)) xs.push_back(x);
    }
  xs.push_back(std::numeric_limits<float>::quiet_NaN());
  while (xs.size() % 4) xs.push_back(0.0f);
  size_t bad_round = 0, bad_exp = 0;
  for (size_t i = 0; i < xs.size(); i += 4) {
    const lanes::v4f x = lanes::load<lanes::v4f>(xs.data() + i);
    const lanes::v4f r = lanes::e4m3_round_lanes(x), e = lanes::exp2f_lanes<lanes::v4f, lanes::v2d>(x);
    for (int l = 0; l < 4; ++l) {
      bad_round += !same_bits(r[l], num::e4m3_round(x[l]));
      // exp2's arguments are differences, never signalling NaNs (which the
      // scalar may pass through unquieted: GCC folds its float -> double -> float).
      uint32_t u;
      std::memcpy(&u, &xs[i + l], sizeof u);
      const bool signalling = std::isnan(xs[i + l]) && !(u & 0x400000u);
      bad_exp += !signalling && !same_bits(e[l], sage2::exp2f_det(x[l]));
    }
  }
  INFO(xs.size() << " values");
  CHECK(bad_round == 0);
  CHECK(bad_exp == 0);
}

TEST_CASE("sage2 softmax step lanes give the scalar bits on every path") {
  std::mt19937 rng(7);
  std::normal_distribution<float> g(0.0f, 1.0f);
  for (const Isa isa : isas_available())
    for (const int64_t nk : {64, 128, 37, 3})
      for (const float spread : {0.5f, 20.0f, 3000.0f})
        for (const bool round_p : {true, false}) {
          std::vector<float> s(static_cast<size_t>(nk));
          float m_want = sage2::kInitialMax, den_want = 0, m_got = m_want, den_got = 0;
          for (int block = 0; block < 4; ++block) {
            for (auto& x : s) x = g(rng) * spread;
            if (block == 2) {  // what a NaN or infinite input gives
              s[1] = std::numeric_limits<float>::quiet_NaN();
              s[2] = -kInf;
            }
            std::vector<float> want(s.size()), got(s.size());
            const float o_want = sage2::softmax_step(s.data(), want.data(), nk, m_want, den_want, round_p);
            const float o_got = sage2_lanes::softmax_step(s.data(), got.data(), nk, m_got, den_got, round_p, isa);
            INFO(isa_name(isa) << " nk " << nk << " spread " << spread << " block " << block);
            CHECK(same_bits(o_got, o_want));
            CHECK(same_bits(m_got, m_want));
            CHECK(same_bits(den_got, den_want));
            size_t differ = 0;
            for (size_t j = 0; j < s.size(); ++j) differ += !same_bits(got[j], want[j]);
            CHECK(differ == 0);
          }
        }
}

TEST_CASE("sage2 accumulator lanes give the scalar bits on every path") {
  std::mt19937 rng(11);
  std::normal_distribution<double> g(0.0, 1.0);
  std::uniform_int_distribution<int> pick(0, 9);
  const int64_t n = 1029;  // a tail on every path
  std::vector<float> acc32(n);
  std::vector<double> acc16(n), c(n);
  auto special = [&](double x) {
    switch (pick(rng)) {
      case 0: return x * 1e5;    // fp16 overflow
      case 1: return x * 1e-6;   // fp16 subnormal
      case 2: return std::ldexp(std::round(x * 64), -20);  // ties of both roundings
      default: return x * 100;
    }
  };
  for (int round = 0; round < 20; ++round) {
    for (int64_t i = 0; i < n; ++i) {
      acc32[i] = static_cast<float>(special(g(rng)));
      acc16[i] = sage2::fp16_of_double(special(g(rng)));
      // c a float plus half its ulp: the sum lands halfway between two floats.
      c[i] = pick(rng) == 0 ? static_cast<double>(acc32[i]) * 0x1p-25 : special(g(rng));
    }
    c[0] = std::numeric_limits<double>::quiet_NaN();
    c[1] = std::numeric_limits<double>::infinity();
    c[2] = -65520.0;
    c[3] = 65519.0;
    for (const Isa isa : isas_available()) {
      std::vector<float> a32 = acc32, w32 = acc32;
      std::vector<double> a16 = acc16, w16 = acc16;
      sage2_lanes::add_f32(a32.data(), c.data(), n, isa);
      sage2_lanes::add_fp16(a16.data(), c.data(), n, isa);
      for (int64_t i = 0; i < n; ++i) {
        w32[i] = sage2::f32_of_sum(w32[i], c[i]);
        w16[i] = sage2::fp16_of_double(w16[i] + c[i]);
      }
      size_t d32 = 0, d16 = 0;
      for (int64_t i = 0; i < n; ++i) {
        d32 += !same_bits(a32[i], w32[i]);
        d16 += !same_bits(a16[i], w16[i]);
      }
      INFO(isa_name(isa) << " round " << round);
      CHECK(d32 == 0);
      CHECK(d16 == 0);
    }
  }
}

TEST_CASE("sage2 exact P·V chunks equal the ordered sum on every path") {
  std::mt19937 rng(13);
  std::uniform_real_distribution<float> u(-448.0f, 448.0f);
  for (const int64_t nr : {128, 7, 1})
    for (const int64_t nk : {32, 5})
      for (const int64_t D : {128, 37}) {
        // E4M3 values, P non-negative, some of them zero (underflowed).
        std::vector<double> p(static_cast<size_t>(nr * 64)), v(static_cast<size_t>(nk * D));
        for (auto& x : p) x = num::e4m3_round(std::fabs(u(rng)) * (u(rng) > 300.0f ? 0.0f : 1.0f));
        for (auto& x : v) x = num::e4m3_round(u(rng) * 0x1p-6f);
        std::vector<double> want(static_cast<size_t>(nr * D));
        for (int64_t i = 0; i < nr; ++i)
          for (int64_t d = 0; d < D; ++d) {
            double a = 0.0;
            for (int64_t j = 0; j < nk; ++j) a += p[i * 64 + j] * v[j * D + d];
            want[i * D + d] = a;
          }
        for (const Isa isa : isas_available()) {
          std::vector<double> got(want.size(), std::nan(""));
          sage2_lanes::exact_pv(p.data(), 64, v.data(), nr, nk, D, got.data(), isa);
          INFO(isa_name(isa) << " nr " << nr << " nk " << nk << " D " << D);
          CHECK(std::memcmp(got.data(), want.data(), got.size() * sizeof(double)) == 0);
        }
      }
}
