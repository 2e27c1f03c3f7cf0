#pragma once
// GCC vector lanes for the host emulations' inner loops (exact_tiles,
// sage2_lanes, sol_lanes). Lane by lane they run the scalar code's IEEE
// operations, each rounded once (-ffp-contract=off: no FMA), so a vector path
// gives the scalar path's bits at any width. Everything here is inlined into
// functions built for one instruction set ([[gnu::target]]), so it compiles
// for that set; no call passes a vector, and GCC's ABI note for vectors wider
// than SSE2 does not apply (hence -Wpsabi off in the files that include this).
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "reference/numerics/detmath.hpp"

namespace ts::lanes {

typedef double v2d __attribute__((vector_size(16)));
typedef double v4d __attribute__((vector_size(32)));
typedef long long v2i __attribute__((vector_size(16)));
typedef long long v4i __attribute__((vector_size(32)));
typedef float v4f __attribute__((vector_size(16)));
typedef float v8f __attribute__((vector_size(32)));
typedef unsigned v4u __attribute__((vector_size(16)));
typedef unsigned v8u __attribute__((vector_size(32)));

// I: the integer vector of the same lane count and width; W: lanes.
template <class V> struct Lanes;
template <> struct Lanes<v2d> { using I = v2i; static constexpr int W = 2; };
template <> struct Lanes<v4d> { using I = v4i; static constexpr int W = 4; };
template <> struct Lanes<v4f> { using I = v4u; static constexpr int W = 4; };
template <> struct Lanes<v8f> { using I = v8u; static constexpr int W = 8; };

#define TS_TILE [[gnu::always_inline]] inline

template <class V, class T>
TS_TILE V load(const T* p) {
  V v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
template <class V, class T>
TS_TILE void store(T* p, const V& v) {
  std::memcpy(p, &v, sizeof v);
}
template <class V, class T>
TS_TILE V splat(T s) {
  V v;
  for (size_t l = 0; l < sizeof v / sizeof v[0]; ++l) v[l] = s;
  return v;
}
template <class To, class From>
TS_TILE To bits(const From& x) {
  static_assert(sizeof(To) == sizeof(From));
  To out;
  std::memcpy(&out, &x, sizeof out);
  return out;
}

// acc rows (R of them, NV*W channels) = (acc, or 0 with Zero) + p0·v0 + p1·v1 + ... in that
// order: P·V with Zero false, and with Zero true the scores Q·Kᵀ (q as p, Kᵀ's rows as v).
template <class V, int R, int NV, bool Zero = false>
TS_TILE void pv_tile(const double* p, int64_t ld_p, const double* v, int64_t ld_v, int64_t nk,
                     double* acc, int64_t ld_acc) {
  constexpr int W = Lanes<V>::W;
  V a[R][NV];
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 16
    for (int n = 0; n < NV; ++n) a[r][n] = Zero ? V{} : load<V>(acc + r * ld_acc + n * W);
  for (int64_t j = 0; j < nk; ++j) {
    V vv[NV];
#pragma GCC unroll 16
    for (int n = 0; n < NV; ++n) vv[n] = load<V>(v + j * ld_v + n * W);
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      const V b = splat<V>(p[r * ld_p + j]);
#pragma GCC unroll 16
      for (int n = 0; n < NV; ++n) a[r][n] = a[r][n] + b * vv[n];
    }
  }
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 16
    for (int n = 0; n < NV; ++n) store(acc + r * ld_acc + n * W, a[r][n]);
}

// mask ? a : b lane by lane (mask lanes all ones or all zeros, as a
// comparison gives them), in bit operations: GCC lowers ?: on vectors wider
// than the machine's registers one lane at a time, with branches.
template <class V, class M>
TS_TILE V select(const M& mask, const V& a, const V& b) {
  return bits<V>((mask & bits<M>(a)) | (~mask & bits<M>(b)));
}

// Whether any lane of a mask is set: the lanes left to scalar code are
// rare, and testing each lane's bit first cost as much as the vector work.
template <class M>
TS_TILE bool any(const M& mask) {
  std::remove_cvref_t<decltype(mask[0])> acc = 0;
  for (size_t l = 0; l < sizeof mask / sizeof mask[0]; ++l) acc |= mask[l];
  return acc != 0;
}

// detmath::exp lane by lane where every lane is in its fast range
// (-708, 709); other lanes are recomputed by detmath::exp itself.
template <class V>
TS_TILE V exp_lanes(const V& x) {
  using I = typename Lanes<V>::I;
  namespace dd = detmath::detail;
  const V t = x * dd::kInvLn2 + dd::kRoundMagic;  // round_even(x / ln 2), biased
  const V k = t - dd::kRoundMagic;
  const V r = (x - k * dd::kLn2Hi) - k * dd::kLn2Lo;
  const I ki = bits<I>(t);
  const long long magic_bits = bits<long long>(dd::kRoundMagic);
  const I two_k_bits = ((ki - magic_bits) + 1023) << 52;  // pow2i(k)
  V e = dd::exp_reduced(r) * bits<V>(two_k_bits);
  const I ok = (x > -708.0) & (x < 709.0);
  if (any(~ok))
    for (int l = 0; l < Lanes<V>::W; ++l)
      if (!ok[l]) e[l] = detmath::exp(x[l]);
  return e;
}

// detmath::exp2 lane by lane where 2^round(x) is normal (the scalar's fast
// path); other lanes (NaN, overflow, subnormal or zero results) by
// detmath::exp2 itself.
template <class V>
TS_TILE V exp2_lanes(const V& x) {
  using I = typename Lanes<V>::I;
  namespace dd = detmath::detail;
  const V t = x + dd::kRoundMagic;
  const V k = t - dd::kRoundMagic;  // round_even(x)
  const V f = x - k;
  const I two_k_bits = ((bits<I>(t) - bits<long long>(dd::kRoundMagic)) + 1023) << 52;
  V e = dd::exp_reduced(f * dd::kLn2) * bits<V>(two_k_bits);
  const I ok = (k > -1022.0) & (k < 1024.0);
  if (any(~ok))
    for (int l = 0; l < Lanes<V>::W; ++l)
      if (!ok[l]) e[l] = detmath::exp2(x[l]);
  return e;
}

// sage2::exp2f_det's float32 exp2 on float lanes F, computed on the
// machine's double lanes D (half or all of F's count): comparisons on a
// vector wider than the registers are lowered one lane at a time.
template <class F, class D>
TS_TILE F exp2f_lanes(const F& x) {
  constexpr int WD = Lanes<D>::W, NH = Lanes<F>::W / WD;
  F out;
  for (int h = 0; h < NH; ++h) {
    D xd;
    for (int l = 0; l < WD; ++l) xd[l] = x[h * WD + l];
    const D e = exp2_lanes(xd);
    for (int l = 0; l < WD; ++l) out[h * WD + l] = static_cast<float>(e[l]);
  }
  return out;
}

// num::e4m3_round lane by lane (float lanes). At or above 2^-6 (E4M3's
// normals) it rounds the bit pattern to 3 mantissa bits, ties to even, as
// convert.hpp's shift_rne; below, E4M3's subnormals are the multiples of 2^-9,
// and adding then removing 1.5 * 2^14 (whose float spacing is 2^-9) rounds
// to them, ties to even, exactly. Saturation to 448 and NaN as e4m3_encode.
template <class F>
TS_TILE F e4m3_round_lanes(const F& x) {
  using I = typename Lanes<F>::I;
  const I u = bits<I>(x);
  const I sign = u & 0x80000000u;
  const I a = u & 0x7FFFFFFFu;
  const F ax = bits<F>(a);
  const I normal = (a + 0x7FFFFu + ((a >> 20) & 1u)) & 0xFFF00000u;
  const F subnormal = (ax + 24576.0f) - 24576.0f;
  I r = select(ax < 0x1p-6f, bits<I>(subnormal), normal);
  r = select(ax > 448.0f, splat<I>(0x43E00000u), r);  // and Inf
  r = select(x != x, splat<I>(0x7FC00000u), r);
  return bits<F>(r | sign);
}

}  // namespace ts::lanes
