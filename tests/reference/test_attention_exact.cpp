#include <omp.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "catch.hpp"
#include "core/block_config.hpp"
#include "core/error.hpp"
#include "reference/attention_exact.hpp"
#include "reference/exact_tiles.hpp"
#include "reference/numerics/detmath.hpp"

namespace {

// Small deterministic inputs with bf16-like values (8 significant bits).
ts::Tensor make_input(int64_t S, int64_t H, int64_t D, uint64_t seed, double amp) {
  ts::Tensor t({S, H, D}, ts::DType::bf16);
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  for (auto& v : t.data) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    const double u = static_cast<double>(x >> 11) / 9007199254740992.0 - 0.5;  // [-0.5, 0.5)
    v = std::ldexp(std::nearbyint(std::ldexp(u * amp, 8)), -8);
  }
  return t;
}

struct Case {
  ts::BlockConfig config = ts::preset_config("tiny");
  ts::Tensor q, k, v;
  ts::AttentionProblem problem() const {
    ts::AttentionProblem p;
    p.q = ts::BSHDView::of(q);
    p.k = ts::BSHDView::of(k);
    p.v = ts::BSHDView::of(v);
    p.segments = config.segments;
    p.softmax_scale = config.softmax_scale;
    p.config = config;
    return p;
  }
};

Case tiny_case(double amp) {
  Case c;
  const int64_t S = c.config.tokens(), H = c.config.heads, D = c.config.head_dim;
  c.q = make_input(S, H, D, 1, amp);
  c.k = make_input(S, H, D, 2, amp);
  c.v = make_input(S, H, D, 3, 2.0);
  return c;
}

// Naive softmax(QK^T)V in long double with the whole row in memory.
std::vector<long double> naive(const Case& c) {
  const int64_t S = c.q.dim(0), H = c.q.dim(1), D = c.q.dim(2);
  std::vector<long double> out(static_cast<size_t>(S * H * D));
  std::vector<long double> s(static_cast<size_t>(S));
  for (int64_t h = 0; h < H; ++h)
    for (int64_t i = 0; i < S; ++i) {
      long double mx = -INFINITY;
      for (int64_t j = 0; j < S; ++j) {
        long double dot = 0;
        for (int64_t d = 0; d < D; ++d)
          dot += (long double)c.q.data[(i * H + h) * D + d] * c.k.data[(j * H + h) * D + d];
        s[j] = dot * (long double)c.config.softmax_scale;
        mx = std::max(mx, s[j]);
      }
      long double den = 0;
      for (int64_t j = 0; j < S; ++j) den += (s[j] = expl(s[j] - mx));
      for (int64_t d = 0; d < D; ++d) {
        long double acc = 0;
        for (int64_t j = 0; j < S; ++j) acc += s[j] * c.v.data[(j * H + h) * D + d];
        out[(i * H + h) * D + d] = acc / den;
      }
    }
  return out;
}

double rel_l2(const std::vector<double>& a, const std::vector<long double>& b) {
  long double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    num += (a[i] - b[i]) * (a[i] - b[i]);
    den += b[i] * b[i];
  }
  return static_cast<double>(sqrtl(num / den));
}

}  // namespace

TEST_CASE("exact attention agrees with a long double naive implementation") {
  // amp 12 gives peaked softmax rows (scores up to ~10), amp 2 near-uniform ones.
  for (double amp : {2.0, 12.0}) {
    const Case c = tiny_case(amp);
    const auto want = naive(c);
    const auto got = ts::attention_exact(c.problem());
    REQUIRE(got.out.shape == c.q.shape);
    const double err = rel_l2(got.out.data, want);
    INFO("amp " << amp << " rel_l2 " << err);
    CHECK(err < 1e-12);
    CHECK(err > 0);  // not compared against itself
  }
}

TEST_CASE("exact attention: small blocks stream the same result") {
  const Case c = tiny_case(12.0);
  const auto want = naive(c);
  ts::ExactOptions o;
  o.block_q = 5;
  o.block_k = 7;  // many partial blocks, exercises the running max
  CHECK(rel_l2(ts::attention_exact(c.problem(), o).out.data, want) < 1e-12);
}

TEST_CASE("exact attention float32 mode stays within 1e-6 of float64") {
  const Case c = tiny_case(12.0);
  ts::ExactOptions o;
  o.precision = ts::ExactPrecision::fp32;
  const auto f32 = ts::attention_exact(c.problem(), o);
  const auto f64 = ts::attention_exact(c.problem());
  std::vector<long double> ref(f64.out.data.begin(), f64.out.data.end());
  const double err = rel_l2(f32.out.data, ref);
  INFO("fp32 vs fp64 rel_l2 " << err);
  CHECK(err < 1e-6);
  CHECK(err > 0);
}

TEST_CASE("exact attention has the same bits at 1 and 2 threads") {
  Case c;
  c.config = ts::preset_config("ci");
  const int64_t S = c.config.tokens(), H = c.config.heads, D = c.config.head_dim;
  c.q = make_input(S, H, D, 4, 8.0);
  c.k = make_input(S, H, D, 5, 8.0);
  c.v = make_input(S, H, D, 6, 2.0);
  const int before = omp_get_max_threads();
  omp_set_num_threads(1);
  const auto one = ts::attention_exact(c.problem());
  omp_set_num_threads(2);
  const auto two = ts::attention_exact(c.problem());
  omp_set_num_threads(before);
  REQUIRE(one.out.data.size() == two.out.data.size());
  CHECK(std::memcmp(one.out.data.data(), two.out.data.data(), one.out.data.size() * 8) == 0);
}

TEST_CASE("exact backend parses its parameters strictly") {
  auto p = ts::BackendParams::parse("exact:precision=fp32");
  auto b = ts::make_exact_backend(p);
  CHECK(b->name() == "exact_fp32");
  auto bad = ts::BackendParams::parse("exact:precison=fp32");
  CHECK_THROWS_AS(ts::make_exact_backend(bad), ts::InputError);
  auto bad2 = ts::BackendParams::parse("exact:precision=fp16");
  CHECK_THROWS_AS(ts::make_exact_backend(bad2), ts::InputError);
}

namespace {

// The float64 path's documented order (exact_tiles.hpp), written out one
// scalar at a time.
std::vector<double> ordered_scalar(const ts::exact_tiles::Task& t) {
  std::vector<double> out(static_cast<size_t>(t.nq * t.D));
  for (int64_t i = 0; i < t.nq; ++i) {
    double m = -INFINITY, l = 0;
    std::vector<double> acc(static_cast<size_t>(t.D), 0.0), p;
    for (int64_t k0 = 0; k0 < t.S; k0 += t.block_k) {
      const int64_t nk = std::min(t.block_k, t.S - k0);
      p.assign(static_cast<size_t>(nk), 0.0);
      double row_max = -INFINITY;
      for (int64_t j = 0; j < nk; ++j) {
        double s = 0.0;
        for (int64_t d = 0; d < t.D; ++d) s = s + t.q[i * t.ld_q + d] * t.k[(k0 + j) * t.ld_k + d];
        p[j] = s;
        row_max = std::max(row_max, s * t.scale);
      }
      const double m_new = std::max(m, row_max);
      const double corr = ts::detmath::exp(m - m_new);
      double part[8] = {0, 0, 0, 0, 0, 0, 0, 0};
      for (int64_t j = 0; j < nk; ++j) part[j % 8] += (p[j] = ts::detmath::exp(p[j] * t.scale - m_new));
      l = l * corr + (((part[0] + part[1]) + (part[2] + part[3])) + ((part[4] + part[5]) + (part[6] + part[7])));
      m = m_new;
      for (int64_t d = 0; d < t.D; ++d) {
        double a = acc[d] * corr;
        for (int64_t j = 0; j < nk; ++j) a = a + p[j] * t.v[(k0 + j) * t.ld_v + d];
        acc[d] = a;
      }
    }
    for (int64_t d = 0; d < t.D; ++d) out[i * t.D + d] = acc[d] / l;
  }
  return out;
}

}  // namespace

TEST_CASE("exact attention: every instruction-set path gives the documented order's bits") {
  // Ragged sizes reach every tail: D and the key block are no multiple of any
  // vector width, the query block no multiple of the row tile; amp 100 makes
  // some exp arguments fall below -708 (detmath::exp's slow path).
  struct Shape {
    int64_t S, D, nq, block_k;
    double amp;
  };
  for (const Shape sh : {Shape{77, 37, 13, 19, 8.0}, Shape{300, 128, 128, 256, 12.0},
                         Shape{64, 16, 9, 8, 100.0}}) {
    const ts::Tensor q = make_input(sh.S, 1, sh.D, 11, sh.amp), k = make_input(sh.S, 1, sh.D, 12, sh.amp),
                     v = make_input(sh.S, 1, sh.D, 13, 2.0);
    ts::exact_tiles::Task t;
    t.q = q.data.data() + 5 * sh.D;  // a query block that starts inside the sequence
    t.k = k.data.data();
    t.v = v.data.data();
    t.ld_q = t.ld_k = t.ld_v = sh.D;
    t.nq = std::min(sh.nq, sh.S - 5);
    t.S = sh.S;
    t.D = sh.D;
    t.block_k = sh.block_k;
    t.scale = 1.0 / std::sqrt(static_cast<double>(sh.D));
    t.ld_out = sh.D;
    const std::vector<double> want = ordered_scalar(t);
    for (const ts::exact_tiles::Isa isa : ts::exact_tiles::isas_available()) {
      std::vector<double> got(want.size(), std::nan(""));
      t.out = got.data();
      ts::exact_tiles::attend(t, isa);
      size_t differ = 0;
      for (size_t i = 0; i < got.size(); ++i) differ += std::memcmp(&got[i], &want[i], 8) != 0;
      INFO("S " << sh.S << " D " << sh.D << " path " << ts::exact_tiles::isa_name(isa) << ": " << differ
                << " of " << got.size() << " values differ");
      CHECK(differ == 0);
    }
  }
}
