// Vector types wider than SSE2 only ever live inside the functions built for
// their instruction set below (reference/lanes.hpp says why that is safe).
#pragma GCC diagnostic ignored "-Wpsabi"

#include "reference/exact_tiles.hpp"

#include <algorithm>
#include <cstring>
#include <limits>

#include "core/error.hpp"
#include "reference/lanes.hpp"
#include "reference/numerics/detmath.hpp"

namespace ts::exact_tiles {
namespace {

using lanes::Lanes;
using lanes::load;
using lanes::pv_tile;
using lanes::splat;
using lanes::store;
using lanes::v2d;
using lanes::v4d;

// Scratch of one task, reused by the thread.
struct Scratch {
  std::vector<double> kt, vp, p, acc, m, l;
};

// K and V are packed per key block into panels of C = NV*W columns (then W,
// then 1 for what is left), each panel contiguous: the tiles then read
// consecutive addresses instead of rows a power of two apart, which would
// share a few L1 sets. Element (row, col) of the panel starting at col0 with
// width c lies at col0 * rows + row * c + (col - col0).
template <int C, int W>
TS_TILE int64_t panel_width(int64_t col0, int64_t cols) {
  return col0 + C <= cols ? C : col0 + W <= cols ? W : 1;
}

// Scores of every query row against one panel of c keys (kt: [D][c]).
template <class V, int R, int NV>
TS_TILE void score_panel(const Task& t, const double* kt, int64_t j0, double* p) {
  const int64_t ld = t.block_k, c = NV * Lanes<V>::W;
  int64_t i = 0;
  for (; i + R <= t.nq; i += R) pv_tile<V, R, NV, true>(t.q + i * t.ld_q, t.ld_q, kt, c, t.D, p + i * ld + j0, ld);
  for (; i < t.nq; ++i) pv_tile<V, 1, NV, true>(t.q + i * t.ld_q, t.ld_q, kt, c, t.D, p + i * ld + j0, ld);
}

template <class V, int R, int NV>
TS_TILE void scores(const Task& t, int64_t k0, int64_t nk, double* kt, double* p) {
  constexpr int W = Lanes<V>::W, C = NV * W;
  const int64_t D = t.D, ld = t.block_k;
  for (int64_t j0 = 0, c; j0 < nk; j0 += c) {
    c = panel_width<C, W>(j0, nk);
    double* panel = kt + j0 * D;
    for (int64_t jj = 0; jj < c; ++jj) {
      const double* kr = t.k + (k0 + j0 + jj) * t.ld_k;
      for (int64_t d = 0; d < D; ++d) panel[d * c + jj] = kr[d];
    }
    if (c == C) {
      score_panel<V, R, NV>(t, panel, j0, p);
    } else if (c == W) {
      score_panel<V, R, 1>(t, panel, j0, p);
    } else {
      for (int64_t i = 0; i < t.nq; ++i) {
        const double* q = t.q + i * t.ld_q;
        double s = 0.0;
        for (int64_t d = 0; d < D; ++d) s = s + q[d] * panel[d];
        p[i * ld + j0] = s;
      }
    }
  }
}

// Every query row's output channels of one panel (vp: [nk][c]).
template <class V, int R, int NV>
TS_TILE void output_panel(const Task& t, const double* p, const double* vp, int64_t nk, int64_t d0,
                          double* acc) {
  const int64_t ld_p = t.block_k, D = t.D, c = NV * Lanes<V>::W;
  int64_t i = 0;
  for (; i + R <= t.nq; i += R) pv_tile<V, R, NV>(p + i * ld_p, ld_p, vp, c, nk, acc + i * D + d0, D);
  for (; i < t.nq; ++i) pv_tile<V, 1, NV>(p + i * ld_p, ld_p, vp, c, nk, acc + i * D + d0, D);
}

template <class V, int R, int NV>
TS_TILE void accumulate(const Task& t, const double* p, int64_t k0, int64_t nk, double* vp, double* acc) {
  constexpr int W = Lanes<V>::W, C = NV * W;
  const int64_t ld_p = t.block_k, D = t.D;
  for (int64_t d0 = 0, c; d0 < D; d0 += c) {
    c = panel_width<C, W>(d0, D);
    double* panel = vp + d0 * nk;
    for (int64_t j = 0; j < nk; ++j) {
      const double* vr = t.v + (k0 + j) * t.ld_v + d0;
      for (int64_t dd = 0; dd < c; ++dd) panel[j * c + dd] = vr[dd];
    }
    if (c == C) {
      output_panel<V, R, NV>(t, p, panel, nk, d0, acc);
    } else if (c == W) {
      output_panel<V, R, 1>(t, p, panel, nk, d0, acc);
    } else {
      for (int64_t i = 0; i < t.nq; ++i) {
        double a = acc[i * D + d0];
        for (int64_t j = 0; j < nk; ++j) a = a + p[i * ld_p + j] * panel[j];
        acc[i * D + d0] = a;
      }
    }
  }
}

// Row i's online-softmax step over a key block of nk raw scores s (in place:
// P = exp(s·scale − m_new)); returns the factor the output row is rescaled by.
template <class V>
TS_TILE double softmax_row(double* s, int64_t nk, double scale, double& m, double& l) {
  constexpr int W = Lanes<V>::W, NP = 8 / W;
  constexpr double kNegInf = -std::numeric_limits<double>::infinity();
  V vmax = splat<V>(kNegInf);
  int64_t j = 0;
  for (; j + W <= nk; j += W) {
    const V x = load<V>(s + j) * scale;
    vmax = vmax < x ? x : vmax;  // std::max's rule, lane by lane
  }
  double row_max = kNegInf;
  for (int u = 0; u < W; ++u) row_max = std::max(row_max, vmax[u]);
  for (; j < nk; ++j) row_max = std::max(row_max, s[j] * scale);
  const double m_new = std::max(m, row_max);
  const double corr = detmath::exp(m - m_new);  // exp(-inf) = 0 on the first block

  V part[NP];
  for (int u = 0; u < NP; ++u) part[u] = V{};
  j = 0;
  for (; j + 8 <= nk; j += 8)
#pragma GCC unroll 4
    for (int u = 0; u < NP; ++u) {
      const V e = lanes::exp_lanes<V>(load<V>(s + j + u * W) * scale - m_new);
      store(s + j + u * W, e);
      part[u] = part[u] + e;
    }
  double p8[8];
  for (int u = 0; u < NP; ++u)
    for (int w = 0; w < W; ++w) p8[u * W + w] = part[u][w];
  for (; j < nk; ++j) {
    const double e = detmath::exp(s[j] * scale - m_new);
    s[j] = e;
    p8[j % 8] = p8[j % 8] + e;
  }
  const double row_sum = ((p8[0] + p8[1]) + (p8[2] + p8[3])) + ((p8[4] + p8[5]) + (p8[6] + p8[7]));
  l = l * corr + row_sum;
  m = m_new;
  return corr;
}

template <class V, int R, int NV>
TS_TILE void attend_impl(const Task& t) {
  constexpr int W = Lanes<V>::W;
  thread_local Scratch sc;
  const int64_t D = t.D, bk = t.block_k, nq = t.nq;
  sc.kt.resize(static_cast<size_t>(D * bk));
  sc.vp.resize(static_cast<size_t>(D * bk));
  sc.p.resize(static_cast<size_t>(nq * bk));
  sc.acc.assign(static_cast<size_t>(nq * D), 0.0);
  sc.m.assign(static_cast<size_t>(nq), -std::numeric_limits<double>::infinity());
  sc.l.assign(static_cast<size_t>(nq), 0.0);
  double* kt = sc.kt.data();
  double* vp = sc.vp.data();
  double* p = sc.p.data();
  double* acc = sc.acc.data();
  for (int64_t k0 = 0; k0 < t.S; k0 += bk) {
    const int64_t nk = std::min(bk, t.S - k0);
    scores<V, R, NV>(t, k0, nk, kt, p);
    for (int64_t i = 0; i < nq; ++i) {
      const double corr = softmax_row<V>(p + i * bk, nk, t.scale, sc.m[i], sc.l[i]);
      double* a = acc + i * D;
      int64_t d = 0;
      for (; d + W <= D; d += W) store(a + d, load<V>(a + d) * corr);
      for (; d < D; ++d) a[d] = a[d] * corr;
    }
    accumulate<V, R, NV>(t, p, k0, nk, vp, acc);
  }
  for (int64_t i = 0; i < nq; ++i)
    for (int64_t d = 0; d < D; ++d) t.out[i * t.ld_out + d] = acc[i * D + d] / sc.l[i];
}

// Tiles of 4 rows x 3 vectors: 12 accumulators, 3 loads and a broadcast fill
// the 16 vector registers of both sets. An AVX-512 path (4 x 4 and 8 x 2 of
// 8 lanes) measured slower than AVX2 on the development machine's Zen 5, so
// AVX-512 machines run the AVX2 path.
void attend_sse2(const Task& t) { attend_impl<v2d, 4, 3>(t); }
#if defined(__x86_64__) || defined(__i386__)
[[gnu::target("avx2")]] void attend_avx2(const Task& t) { attend_impl<v4d, 4, 3>(t); }
#else
// Elsewhere the two-lane path (GCC lowers it to that machine's vectors) runs
// for both names: the same order, the same bits.
void attend_avx2(const Task& t) { attend_impl<v2d, 4, 3>(t); }
#endif

}  // namespace

void attend(const Task& t, Isa isa) {
  const std::vector<Isa> ok = isas_available();
  if (std::find(ok.begin(), ok.end(), isa) == ok.end())
    throw InternalError(std::string("exact reference: this CPU cannot run the ") + isa_name(isa) + " path");
  switch (isa) {
    case Isa::sse2: return attend_sse2(t);
    case Isa::avx2: return attend_avx2(t);
  }
}

void attend(const Task& t) {
  switch (best_isa()) {
    case Isa::sse2: return attend_sse2(t);
    case Isa::avx2: return attend_avx2(t);
  }
}

}  // namespace ts::exact_tiles
