// Vector types wider than SSE2 only ever live inside the functions built for
// their instruction set below (reference/lanes.hpp says why that is safe).
#pragma GCC diagnostic ignored "-Wpsabi"

#include "reference/sage2_lanes.hpp"

#include <algorithm>
#include <cstring>
#include <limits>
#include <string>

#include "core/error.hpp"
#include "reference/lanes.hpp"
#include "reference/numerics/convert.hpp"
#include "reference/sage2_arith.hpp"

namespace ts::sage2_lanes {
namespace {

using lanes::bits;
using lanes::Lanes;
using lanes::load;
using lanes::splat;
using lanes::store;

constexpr float kInfF = std::numeric_limits<float>::infinity();
constexpr double kInf = std::numeric_limits<double>::infinity();

// sage2::fp16_of_double lane by lane, as a double (the fp16 value is exact
// in it, as the scalar's float is). Magnitudes are clamped to 2^16 before the
// constant is built from their exponent: above, the result is ±Inf anyway.
template <class V>
TS_TILE V fp16_of_double_lanes(const V& x) {
  using I = typename Lanes<V>::I;
  using lanes::select;
  const V ax = bits<V>(bits<I>(x) & 0x7FFFFFFFFFFFFFFFLL);
  const V axc = select(ax < 65536.0, ax, splat<V>(65536.0));
  const I c_bits = select(ax < 0x1p-14, splat<I>((1051LL << 52) | (1LL << 51)),  // e clamped to -14
                          ((bits<I>(axc) & 0x7FF0000000000000LL) + (42LL << 52)) | (1LL << 51));
  const V c = bits<V>(c_bits);
  V r = (x + c) - c;
  r = select(r > 65504.0, splat<V>(kInf), r);
  r = select(r < -65504.0, splat<V>(-kInf), r);
  r = select(ax >= 65536.0, select(x > 0.0, splat<V>(kInf), splat<V>(-kInf)), r);
  return select(x != x, splat<V>(static_cast<double>(std::numeric_limits<float>::quiet_NaN())), r);
}

// F: float lanes, D: double lanes of the machine (SSE2 v4f and v2d, AVX2
// v8f and v4d); vectors wider than the registers compare lane by lane.
template <class F, class D>
TS_TILE float softmax_impl(const float* s, float* p, int64_t nk, float& m, float& den, bool round_p) {
  constexpr int W = Lanes<F>::W;
  // The row maximum in lanes: std::max's rule skips NaN in each lane as in
  // key order, and the sign of a zero maximum is lost in rowmax - 8.807.
  F vmax = splat<F>(-kInfF);
  int64_t j = 0;
  for (; j + W <= nk; j += W) {
    const F x = load<F>(s + j);
    vmax = lanes::select(vmax < x, x, vmax);
  }
  float rowmax = -kInfF;
  for (int l = 0; l < W; ++l) rowmax = std::max(rowmax, vmax[l]);
  for (; j < nk; ++j) rowmax = std::max(rowmax, s[j]);
  const float m_new = sage2::softmax_new_max(m, rowmax);
  const float oscale = sage2::exp2f_det(m - m_new);
  m = m_new;
  float lsum = 0.0f;
  for (j = 0; j + W <= nk; j += W) {
    const F pj = lanes::exp2f_lanes<F, D>(load<F>(s + j) - m_new);
    for (int l = 0; l < W; ++l) lsum += pj[l];  // in key order
    store(p + j, round_p ? lanes::e4m3_round_lanes(pj) : pj);
  }
  for (; j < nk; ++j) {
    const float pj = sage2::softmax_p(s[j], m_new);
    lsum += pj;
    p[j] = round_p ? num::e4m3_round(pj) : pj;
  }
  den = den * oscale + lsum;
  return oscale;
}

template <class D>
TS_TILE void add_f32_impl(float* acc, const double* c, int64_t n) {
  constexpr int W = Lanes<D>::W;
  int64_t i = 0;
  for (; i + W <= n; i += W) {
    D a, fd;
    for (int l = 0; l < W; ++l) a[l] = acc[i + l];
    const D b = load<D>(c + i);
    const D s = a + b, bb = s - a;
    const D err = (a - (s - bb)) + (b - bb);
    float f[W];
    for (int l = 0; l < W; ++l) fd[l] = f[l] = static_cast<float>(s[l]);
    using DI = typename Lanes<D>::I;
    const D afd = bits<D>(bits<DI>(fd) & 0x7FFFFFFFFFFFFFFFLL);
    // f32_of_sum's early returns; the rest (s halfway between two floats,
    // rare) take its own tie rule.
    const DI done = (err == 0.0) | (fd == s) | ~(afd < kInf);
    if (lanes::any(~done))
      for (int l = 0; l < W; ++l)
        if (!done[l]) f[l] = sage2::f32_of_sum(a[l], b[l]);
    std::memcpy(acc + i, f, sizeof f);
  }
  for (; i < n; ++i) acc[i] = sage2::f32_of_sum(acc[i], c[i]);
}

template <class D>
TS_TILE void add_fp16_impl(double* acc, const double* c, int64_t n) {
  constexpr int W = Lanes<D>::W;
  int64_t i = 0;
  for (; i + W <= n; i += W) store(acc + i, fp16_of_double_lanes(load<D>(acc + i) + load<D>(c + i)));
  for (; i < n; ++i) acc[i] = sage2::fp16_of_double(acc[i] + c[i]);
}

// Rows [i, i + R) of c = p · v: tiles of NV vectors, then one, then scalar.
template <class V, int R, int NV>
TS_TILE void pv_rows(const double* p, int64_t ld_p, const double* v, int64_t nk, int64_t D, double* c, int64_t i) {
  constexpr int W = Lanes<V>::W;
  int64_t d0 = 0;
  for (; d0 + NV * W <= D; d0 += NV * W) lanes::pv_tile<V, R, NV>(p + i * ld_p, ld_p, v + d0, D, nk, c + i * D + d0, D);
  for (; d0 + W <= D; d0 += W) lanes::pv_tile<V, R, 1>(p + i * ld_p, ld_p, v + d0, D, nk, c + i * D + d0, D);
  for (; d0 < D; ++d0)
    for (int r = 0; r < R; ++r) {
      double a = 0.0;
      for (int64_t j = 0; j < nk; ++j) a = a + p[(i + r) * ld_p + j] * v[j * D + d0];
      c[(i + r) * D + d0] = a;
    }
}

// 4 rows x 3 vectors: 12 accumulators, 3 loads and a broadcast in 16 registers.
template <class V>
TS_TILE void exact_pv_impl(const double* p, int64_t ld_p, const double* v, int64_t nr, int64_t nk, int64_t D,
                           double* c) {
  std::fill(c, c + nr * D, 0.0);
  int64_t i = 0;
  for (; i + 4 <= nr; i += 4) pv_rows<V, 4, 3>(p, ld_p, v, nk, D, c, i);
  for (; i < nr; ++i) pv_rows<V, 1, 3>(p, ld_p, v, nk, D, c, i);
}

float softmax_sse2(const float* s, float* p, int64_t nk, float& m, float& den, bool round_p) {
  return softmax_impl<lanes::v4f, lanes::v2d>(s, p, nk, m, den, round_p);
}
void add_f32_sse2(float* acc, const double* c, int64_t n) { add_f32_impl<lanes::v2d>(acc, c, n); }
void add_fp16_sse2(double* acc, const double* c, int64_t n) { add_fp16_impl<lanes::v2d>(acc, c, n); }
void exact_pv_sse2(const double* p, int64_t ld_p, const double* v, int64_t nr, int64_t nk, int64_t D, double* c) {
  exact_pv_impl<lanes::v2d>(p, ld_p, v, nr, nk, D, c);
}
#if defined(__x86_64__) || defined(__i386__)
[[gnu::target("avx2")]] void exact_pv_avx2(const double* p, int64_t ld_p, const double* v, int64_t nr, int64_t nk,
                                           int64_t D, double* c) {
  exact_pv_impl<lanes::v4d>(p, ld_p, v, nr, nk, D, c);
}
[[gnu::target("avx2")]] float softmax_avx2(const float* s, float* p, int64_t nk, float& m, float& den,
                                           bool round_p) {
  return softmax_impl<lanes::v8f, lanes::v4d>(s, p, nk, m, den, round_p);
}
[[gnu::target("avx2")]] void add_f32_avx2(float* acc, const double* c, int64_t n) {
  add_f32_impl<lanes::v4d>(acc, c, n);
}
[[gnu::target("avx2")]] void add_fp16_avx2(double* acc, const double* c, int64_t n) {
  add_fp16_impl<lanes::v4d>(acc, c, n);
}
#else
// Elsewhere the four-lane path (GCC lowers it to that machine's vectors)
// runs for both names: the same bits.
float softmax_avx2(const float* s, float* p, int64_t nk, float& m, float& den, bool round_p) {
  return softmax_sse2(s, p, nk, m, den, round_p);
}
void add_f32_avx2(float* acc, const double* c, int64_t n) { add_f32_sse2(acc, c, n); }
void add_fp16_avx2(double* acc, const double* c, int64_t n) { add_fp16_sse2(acc, c, n); }
void exact_pv_avx2(const double* p, int64_t ld_p, const double* v, int64_t nr, int64_t nk, int64_t D, double* c) {
  exact_pv_sse2(p, ld_p, v, nr, nk, D, c);
}
#endif

Isa checked(Isa isa) {
  const std::vector<Isa> ok = isas_available();
  if (std::find(ok.begin(), ok.end(), isa) == ok.end())
    throw InternalError(std::string("sage2 emulation: this CPU cannot run the ") + isa_name(isa) + " path");
  return isa;
}

}  // namespace

float softmax_step(const float* s, float* p, int64_t nk, float& m, float& den, bool round_p, Isa isa) {
  return checked(isa) == Isa::avx2 ? softmax_avx2(s, p, nk, m, den, round_p)
                                   : softmax_sse2(s, p, nk, m, den, round_p);
}
void add_f32(float* acc, const double* c, int64_t n, Isa isa) {
  checked(isa) == Isa::avx2 ? add_f32_avx2(acc, c, n) : add_f32_sse2(acc, c, n);
}
void add_fp16(double* acc, const double* c, int64_t n, Isa isa) {
  checked(isa) == Isa::avx2 ? add_fp16_avx2(acc, c, n) : add_fp16_sse2(acc, c, n);
}

float softmax_step(const float* s, float* p, int64_t nk, float& m, float& den, bool round_p) {
  return best_isa() == Isa::avx2 ? softmax_avx2(s, p, nk, m, den, round_p)
                                 : softmax_sse2(s, p, nk, m, den, round_p);
}
void add_f32(float* acc, const double* c, int64_t n) {
  best_isa() == Isa::avx2 ? add_f32_avx2(acc, c, n) : add_f32_sse2(acc, c, n);
}
void add_fp16(double* acc, const double* c, int64_t n) {
  best_isa() == Isa::avx2 ? add_fp16_avx2(acc, c, n) : add_fp16_sse2(acc, c, n);
}

void exact_pv(const double* p, int64_t ld_p, const double* v, int64_t nr, int64_t nk, int64_t D, double* c,
              Isa isa) {
  checked(isa) == Isa::avx2 ? exact_pv_avx2(p, ld_p, v, nr, nk, D, c) : exact_pv_sse2(p, ld_p, v, nr, nk, D, c);
}
void exact_pv(const double* p, int64_t ld_p, const double* v, int64_t nr, int64_t nk, int64_t D, double* c) {
  best_isa() == Isa::avx2 ? exact_pv_avx2(p, ld_p, v, nr, nk, D, c) : exact_pv_sse2(p, ld_p, v, nr, nk, D, c);
}

}  // namespace ts::sage2_lanes
