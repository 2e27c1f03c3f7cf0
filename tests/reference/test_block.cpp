// The block reference: elementwise stages against hand values, RoPE's
// properties, the fixed-order GEMMs, NVFP4 at block shapes, and the whole
// fp64 block against a naive long-double implementation written here.
#include <omp.h>

#include <cmath>
#include <vector>

#include "catch.hpp"
#include "core/error.hpp"
#include "reference/attention_exact.hpp"
#include "reference/backend_params.hpp"
#include "reference/block.hpp"
#include "reference/block_linear.hpp"
#include "reference/block_nvfp4.hpp"
#include "reference/block_stages.hpp"
#include "reference/numerics/nvfp4.hpp"
#include "reference/rope.hpp"
#include "test_block_support.hpp"
#include "test_sage2_inputs.hpp"

using namespace ts;
using blk::Arith;
using ts::testing::rel_l2;

namespace {

double rel_l2(const std::vector<long double>& ref, const Tensor& t) {
  long double num = 0, den = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    const long double d = static_cast<long double>(t.data[i]) - ref[i];
    num += d * d;
    den += ref[i] * ref[i];
  }
  return static_cast<double>(std::sqrt(num / den));
}

bool is_bf16(double v) { return static_cast<double>(num::bf16_round(static_cast<float>(v))) == v; }

std::unique_ptr<AttentionBackend> exact_backend() {
  BackendParams p = BackendParams::parse("exact");
  auto b = make_exact_backend(p);
  p.finish();
  return b;
}

}  // namespace

TEST_CASE("rms_norm_row against hand values in both arithmetics", "[block]") {
  const double x[4] = {1, 2, 3, 4}, w[4] = {1, 1, 2, 0.5};
  double out[4];
  blk::rms_norm_row(x, 4, w, 0.0, Arith::f64, out);
  const double r = std::sqrt(7.5);  // mean of squares = 30 / 4
  CHECK(out[0] == Approx(1 / r).epsilon(1e-15));
  CHECK(out[2] == Approx(6 / r).epsilon(1e-15));
  CHECK(out[3] == Approx(2 / r).epsilon(1e-15));
  blk::rms_norm_row(x, 4, w, 0.0, Arith::bf16, out);
  // 1/sqrt(7.5) = 0.365148...: bf16 of it and its multiples.
  CHECK(out[0] == 0.365234375);
  CHECK(out[1] == 0.73046875);
  CHECK(out[2] == 2.1875);
  for (double v : out) CHECK(is_bf16(v));
  // eps enters under the root.
  const double z[2] = {0, 0};
  blk::rms_norm_row(z, 2, nullptr, 1e-5, Arith::f64, out);
  CHECK(out[0] == 0.0);
}

TEST_CASE("modulate, gated residual and SwiGLU against hand values", "[block]") {
  CHECK(blk::modulate_f64(2.0, 0.5, 0.25) == 3.0);
  CHECK(blk::modulate_bf16(2.0f, 0.5f, 0.25f) == 3.0f);
  // 1 * (1 + 2^-8) is a bf16 tie between 1 and 1 + 2^-7: even wins.
  CHECK(blk::modulate_bf16(1.0f, 0.0f, 0x1p-8f) == 1.0f);
  CHECK(blk::modulate_bf16(1.0f, 0x1p-20f, 0x1p-8f) == 1.0078125f);
  CHECK(blk::gated_residual_f64(1.0, 0.5, 4.0) == 3.0);
  CHECK(blk::gated_residual_bf16(256.0f, 1.0f, 1.0f) == 256.0f);  // 257 is a tie -> 256
  CHECK(blk::silu_f64(0.0) == 0.0);
  CHECK(blk::silu_f64(1.0) == Approx(0.7310585786300049).epsilon(1e-15));
  CHECK(blk::silu_f64(-2.0) == Approx(-0.2384058440442351).epsilon(1e-15));
  CHECK(blk::swiglu_f64(2.0, 1.0) == Approx(1.4621171572600098).epsilon(1e-15));
  CHECK(blk::swiglu_bf16(2.0f, 1.0f) == 1.4609375f);  // bf16 of 1.46211...
  CHECK(blk::silu_f32(-200.0f) == 0.0f);
  CHECK(std::isnan(blk::silu_f64(std::nan(""))));
}

TEST_CASE("bf16_round_f64 rounds once, not through float32", "[block]") {
  // 1 + 2^-8 + 2^-40 rounds to 1 + 2^-8 in float32, a bf16 tie that would go
  // to 1; rounded once it is above the tie.
  CHECK(blk::bf16_round_f64(1.0 + 0x1p-8 + 0x1p-40) == 1.0078125f);
  CHECK(blk::bf16_round_f64(1.0 + 0x1p-8) == 1.0f);
  CHECK(blk::bf16_round_f64(-(1.0 + 0x1p-8 + 0x1p-40)) == -1.0078125f);
  CHECK(blk::bf16_round_f64(3.0) == 3.0f);
}

TEST_CASE("RoPE: rotate-half layout, untouched tail, norms and relative positions", "[block][rope]") {
  const BlockConfig c = preset_config("tiny");  // D 32, rope_rot_dims 24: F = 4
  const Rope rope(c);
  const int64_t D = c.head_dim, F = c.rope_freqs_per_axis;
  REQUIRE(F == 4);
  SECTION("channel i pairs with i + F within each axis") {
    for (int axis = 0; axis < 3; ++axis) {
      std::vector<double> row(static_cast<size_t>(D), 0.0);
      row[static_cast<size_t>(2 * F * axis + 1)] = 1.0;  // frequency 1 of this axis
      double pos[3] = {0, 0, 0};
      pos[axis] = 2.0;
      rope.apply(row.data(), pos);
      const double ang = 2.0 * std::pow(c.rope_theta, -1.0 / static_cast<double>(F));
      for (int64_t d = 0; d < D; ++d) {
        double expect = 0;
        if (d == 2 * F * axis + 1) expect = std::cos(ang);
        if (d == 2 * F * axis + 1 + F) expect = std::sin(ang);
        CHECK(row[static_cast<size_t>(d)] == Approx(expect).margin(1e-15));
      }
    }
  }
  SECTION("channels past rope_rot_dims pass through") {
    blocktest::Rng r(3);
    std::vector<double> row(static_cast<size_t>(D)), orig;
    for (auto& v : row) v = r.uniform();
    orig = row;
    const double pos[3] = {3.0, 1.5, -7.0};
    rope.apply(row.data(), pos);
    for (int64_t d = c.rope_rot_dims; d < D; ++d) CHECK(row[static_cast<size_t>(d)] == orig[static_cast<size_t>(d)]);
    int changed = 0;
    for (int64_t d = 0; d < c.rope_rot_dims; ++d) changed += row[static_cast<size_t>(d)] != orig[static_cast<size_t>(d)];
    CHECK(changed == c.rope_rot_dims);
  }
  SECTION("norm preserved and q.k depends only on the position difference") {
    blocktest::Rng r(4);
    std::vector<double> q(static_cast<size_t>(D)), k(static_cast<size_t>(D));
    for (auto& v : q) v = r.uniform();
    for (auto& v : k) v = r.uniform();
    auto dot_at = [&](const double pq[3], const double pk[3]) {
      auto a = q, b = k;
      rope.apply(a.data(), pq);
      rope.apply(b.data(), pk);
      double d = 0, na = 0, n0 = 0;
      for (int64_t i = 0; i < D; ++i) {
        d += a[static_cast<size_t>(i)] * b[static_cast<size_t>(i)];
        na += a[static_cast<size_t>(i)] * a[static_cast<size_t>(i)];
        n0 += q[static_cast<size_t>(i)] * q[static_cast<size_t>(i)];
      }
      CHECK(na == Approx(n0).epsilon(1e-14));
      return d;
    };
    const double p1[3] = {1, 2, 3}, k1[3] = {4, 0.5, 9};
    const double p2[3] = {11, -3, 103}, k2[3] = {14, -4.5, 109};  // same differences
    const double p3[3] = {1, 2, 3}, k3[3] = {5, 0.5, 9};           // one differs
    const double d1 = dot_at(p1, k1), d2 = dot_at(p2, k2), d3 = dot_at(p3, k3);
    CHECK(d1 == Approx(d2).epsilon(1e-12));
    CHECK(std::abs(d1 - d3) > 1e-3);
  }
}

TEST_CASE("fixed-order GEMMs: accurate and the same bits for any tiling", "[block][gemm]") {
  blocktest::Rng r(5);
  const int64_t rows = 7, N = 5, K = 203;  // odd sizes hit every edge tile and the lane tail
  std::vector<double> x(static_cast<size_t>(rows * K)), w(static_cast<size_t>(N * K));
  for (auto& v : x) v = r.uniform();
  for (auto& v : w) v = r.uniform();
  std::vector<double> y(static_cast<size_t>(rows * N)), y1(static_cast<size_t>(N));
  blk::gemm_f64(x.data(), rows, w.data(), N, K, y.data());
  std::vector<float> xf(x.begin(), x.end()), wf(w.begin(), w.end());
  std::vector<float> yf(static_cast<size_t>(rows * N)), yf1(static_cast<size_t>(N));
  blk::gemm_f32(xf.data(), rows, wf.data(), N, K, yf.data());
  for (int64_t i = 0; i < rows; ++i) {
    blk::gemm_f64(x.data() + i * K, 1, w.data(), N, K, y1.data());
    blk::gemm_f32(xf.data() + i * K, 1, wf.data(), N, K, yf1.data());
    for (int64_t j = 0; j < N; ++j) {
      long double ref = 0, reff = 0;
      for (int64_t k = 0; k < K; ++k) {
        ref += static_cast<long double>(x[static_cast<size_t>(i * K + k)]) * w[static_cast<size_t>(j * K + k)];
        reff += static_cast<long double>(xf[static_cast<size_t>(i * K + k)]) * wf[static_cast<size_t>(j * K + k)];
      }
      const size_t at = static_cast<size_t>(i * N + j);
      CHECK(std::abs(y[at] - static_cast<double>(ref)) < 1e-13);
      CHECK(std::abs(yf[at] - static_cast<double>(reff)) < 1e-4);
      CHECK(y1[static_cast<size_t>(j)] == y[at]);   // bit-identical whatever the tile
      CHECK(yf1[static_cast<size_t>(j)] == yf[at]);
    }
  }
}

TEST_CASE("NVFP4 linear at block shapes matches dequantise-then-fp64 to bf16 rounding", "[block][nvfp4]") {
  const auto in = blocktest::make_inputs("ci", 11);  // fc1 of ci: K = 512, N = 2048
  const int64_t rows = 1100, K = in.config.hidden;   // more than one 1024-row chunk
  const Tensor& w = in.weight("w_fc1");
  const int64_t N = w.dim(0);
  blocktest::Rng r(12);
  std::vector<double> x(static_cast<size_t>(rows * K));
  for (auto& v : x) v = r.bf16(2.0);
  std::vector<double> y(static_cast<size_t>(rows * N));
  blk::nvfp4_linear(x.data(), rows, K, w, nullptr, "te", 32, y.data());

  // Independent path: whole tensors quantised at once (dynamic amax), then
  // dequantised and multiplied in float64.
  std::vector<float> xf(x.begin(), x.end()), wf(w.data.begin(), w.data.end());
  const auto xq = num::nvfp4_quantize(xf.data(), rows, K);
  const auto wq = num::nvfp4_quantize(wf.data(), N, K);
  std::vector<double> ref(static_cast<size_t>(rows * N));
  num::nvfp4_gemm_reference(xq, wq, ref.data());
  std::vector<float> direct(static_cast<size_t>(rows * N));
  num::nvfp4_gemm(xq, wq, direct.data());
  double num2 = 0, den2 = 0;
  int64_t off = 0, not_same = 0;
  for (size_t i = 0; i < y.size(); ++i) {
    not_same += y[i] != static_cast<double>(direct[i]);  // chunking changes no bit
    const double d = y[i] - ref[i];
    num2 += d * d;
    den2 += ref[i] * ref[i];
    // bf16 rounding (unit roundoff 2^-8) plus float32 accumulation error.
    off += std::abs(d) > 0x1p-8 * std::abs(ref[i]) + 1e-5 * std::sqrt(static_cast<double>(K));
  }
  CHECK(not_same == 0);
  CHECK(off == 0);
  CHECK(std::sqrt(num2 / den2) < 2e-3);
  CHECK(std::sqrt(num2 / den2) > 1e-4);  // the bf16 output rounding is there
}

namespace {

// The block written again from block.md with plain loops in long double.
std::map<std::string, std::vector<long double>> naive_block(const BlockInputs& in) {
  const BlockConfig& c = in.config;
  const int64_t S = in.tokens(), M = c.hidden, H = c.heads, D = c.head_dim, F = c.ffn_hidden;
  const int64_t HD = H * D, Fr = c.rope_freqs_per_axis;
  using V = std::vector<long double>;
  std::map<std::string, V> st;
  auto W = [&](const char* n) { return in.weight(n).data; };
  auto norm = [&](const V& x, int64_t n, const std::vector<double>& w, V& out, int64_t rowsz) {
    for (int64_t s = 0; s < static_cast<int64_t>(x.size()) / rowsz; ++s)
      for (int64_t g = 0; g < rowsz / n; ++g) {
        long double ss = 0;
        for (int64_t i = 0; i < n; ++i) ss += x[s * rowsz + g * n + i] * x[s * rowsz + g * n + i];
        const long double inv = 1.0L / std::sqrt(ss / n + static_cast<long double>(c.rms_eps));
        for (int64_t i = 0; i < n; ++i) out[s * rowsz + g * n + i] = x[s * rowsz + g * n + i] * inv * w[i];
      }
  };
  auto mod = [&](int64_t s, int which, int64_t ch) {
    return static_cast<long double>(in.mod(s, which)[ch]);
  };
  auto lin = [&](const V& x, int64_t K, const std::vector<double>& w, int64_t N) {
    V y(static_cast<size_t>(S * N));
    for (int64_t s = 0; s < S; ++s)
      for (int64_t n = 0; n < N; ++n) {
        long double a = 0;
        for (int64_t k = 0; k < K; ++k) a += x[s * K + k] * w[n * K + k];
        y[s * N + n] = a;
      }
    return y;
  };
  V x(in.x.data.begin(), in.x.data.end());
  V n1(x.size()), m1(x.size());
  norm(x, M, W("norm1_w"), n1, M);
  for (int64_t s = 0; s < S; ++s)
    for (int64_t ch = 0; ch < M; ++ch)
      m1[s * M + ch] = n1[s * M + ch] * (1 + mod(s, 1, ch)) + mod(s, 0, ch);
  V qkv = lin(m1, M, W("w_qkv"), 3 * HD);
  V q(static_cast<size_t>(S * HD)), k(q.size()), v(q.size());
  for (int64_t s = 0; s < S; ++s)
    for (int64_t i = 0; i < HD; ++i) {
      q[s * HD + i] = qkv[s * 3 * HD + i];
      k[s * HD + i] = qkv[s * 3 * HD + HD + i];
      v[s * HD + i] = qkv[s * 3 * HD + 2 * HD + i];
    }
  norm(q, D, W("q_norm"), q, HD);
  norm(k, D, W("k_norm"), k, HD);
  for (V* t : {&q, &k})
    for (int64_t s = 0; s < S; ++s)
      for (int64_t h = 0; h < H; ++h)
        for (int ax = 0; ax < 3; ++ax)
          for (int64_t i = 0; i < Fr; ++i) {
            const long double ang = static_cast<long double>(in.positions.data[static_cast<size_t>(3 * s + ax)]) *
                                    std::pow(static_cast<long double>(c.rope_theta), -static_cast<long double>(i) / Fr);
            long double& a = (*t)[s * HD + h * D + 2 * Fr * ax + i];
            long double& b = (*t)[s * HD + h * D + 2 * Fr * ax + i + Fr];
            const long double a0 = a, b0 = b;
            a = a0 * std::cos(ang) - b0 * std::sin(ang);
            b = b0 * std::cos(ang) + a0 * std::sin(ang);
          }
  V att(q.size());
  std::vector<long double> p(static_cast<size_t>(S));
  for (int64_t h = 0; h < H; ++h)
    for (int64_t i = 0; i < S; ++i) {
      long double mx = -INFINITY;
      for (int64_t j = 0; j < S; ++j) {
        long double d = 0;
        for (int64_t e = 0; e < D; ++e) d += q[i * HD + h * D + e] * k[j * HD + h * D + e];
        p[j] = d * static_cast<long double>(c.softmax_scale);
        mx = std::max(mx, p[j]);
      }
      long double den = 0;
      for (int64_t j = 0; j < S; ++j) den += (p[j] = std::exp(p[j] - mx));
      for (int64_t e = 0; e < D; ++e) {
        long double a = 0;
        for (int64_t j = 0; j < S; ++j) a += p[j] * v[j * HD + h * D + e];
        att[i * HD + h * D + e] = a / den;
      }
    }
  V op = lin(att, HD, W("w_out"), M);
  V r1(x.size()), n2(x.size()), m2(x.size());
  for (int64_t s = 0; s < S; ++s)
    for (int64_t ch = 0; ch < M; ++ch) r1[s * M + ch] = x[s * M + ch] + mod(s, 2, ch) * op[s * M + ch];
  norm(r1, M, W("norm2_w"), n2, M);
  for (int64_t s = 0; s < S; ++s)
    for (int64_t ch = 0; ch < M; ++ch)
      m2[s * M + ch] = n2[s * M + ch] * (1 + mod(s, 4, ch)) + mod(s, 3, ch);
  V f1 = lin(m2, M, W("w_fc1"), 2 * F);
  V sw(static_cast<size_t>(S * F));
  for (int64_t s = 0; s < S; ++s)
    for (int64_t i = 0; i < F; ++i) {
      const long double g = f1[s * 2 * F + F + i];
      sw[s * F + i] = f1[s * 2 * F + i] * g / (1 + std::exp(-g));
    }
  V f2 = lin(sw, F, W("w_fc2"), M);
  V out(x.size());
  for (int64_t s = 0; s < S; ++s)
    for (int64_t ch = 0; ch < M; ++ch) out[s * M + ch] = r1[s * M + ch] + mod(s, 5, ch) * f2[s * M + ch];
  st["norm1"] = n1;
  st["modulate1"] = m1;
  st["qkv"] = qkv;
  st["q_rope"] = q;
  st["k_rope"] = k;
  st["attention"] = att;
  st["out_proj"] = op;
  st["residual1"] = r1;
  st["norm2"] = n2;
  st["modulate2"] = m2;
  st["fc1"] = f1;
  st["swiglu"] = sw;
  st["fc2"] = f2;
  st["output"] = out;
  return st;
}

}  // namespace

TEST_CASE("fp64 block with exact attention matches a naive long-double block on tiny", "[block]") {
  const auto in = blocktest::make_inputs("tiny", 21);
  auto att = exact_backend();
  const BlockResult res = run_block(in, *att, {});
  const auto ref = naive_block(in);
  REQUIRE(res.stages.size() == block_stage_names().size());
  for (const auto& name : block_stage_names()) {
    INFO("stage " << name);
    const Tensor& t = res.stages.at(name);
    CHECK(t.dtype == DType::f64);
    CHECK(static_cast<size_t>(t.numel()) == ref.at(name).size());
    CHECK(rel_l2(ref.at(name), t) < 1e-12);
    CHECK(res.stage_ms.at(name) >= 0.0);
  }
  CHECK(res.stages.at("qkv").shape == std::vector<int64_t>{72, 3, 2, 32});
  CHECK(res.stages.at("fc1").shape == std::vector<int64_t>{72, 256});
  // The naive block is sensitive to what it checks: a modulation row swap shows.
  auto moved = in;
  moved.modulation_row[0] = moved.modulation_row[0] == 0 ? 1 : 0;
  const BlockResult res2 = run_block(moved, *att, {});
  CHECK(rel_l2(ref.at("modulate1"), res2.stages.at("modulate1")) > 1e-6);
}

TEST_CASE("bf16 and nvfp4 blocks: bf16 stage outputs, plausible errors, thread-independent bits", "[block]") {
  const auto in = blocktest::make_inputs("tiny", 22);
  auto att = exact_backend();
  const BlockResult exact = run_block(in, *att, {});
  BlockOptions bo;
  bo.linear = LinearMode::bf16;
  const BlockResult b1 = run_block(in, *att, bo);
  BlockOptions no;
  no.linear = LinearMode::nvfp4;
  const BlockResult n1 = run_block(in, *att, no);
  for (const auto& name : block_stage_names()) {
    INFO("stage " << name);
    const Tensor& t = b1.stages.at(name);
    CHECK(t.dtype == DType::bf16);
    int64_t not_bf16 = 0;
    for (double v : t.data) not_bf16 += !is_bf16(v);
    CHECK(not_bf16 == 0);
    const double eb = rel_l2(t, exact.stages.at(name));
    const double en = rel_l2(n1.stages.at(name), exact.stages.at(name));
    CHECK(eb < 2e-2);
    if (name != "norm1" && name != "modulate1") CHECK(en > eb);  // NVFP4 is coarser than bf16
    CHECK(en < 0.5);
  }
  CHECK(rel_l2(n1.stages.at("norm1"), b1.stages.at("norm1")) == 0.0);  // before the first linear
  const int threads = omp_get_max_threads();
  omp_set_num_threads(1);
  BlockOptions small_chunks = no;
  small_chunks.chunk_tokens = 5;
  const BlockResult n_one = run_block(in, *att, small_chunks);
  omp_set_num_threads(threads);
  for (const auto& name : block_stage_names()) {
    INFO("stage " << name);
    CHECK(n_one.stages.at(name).data == n1.stages.at(name).data);
  }
}

TEST_CASE("keep drops unrequested stages; bad inputs are InputErrors", "[block]") {
  auto in = blocktest::make_inputs("tiny", 23);
  auto att = exact_backend();
  BlockOptions o;
  o.keep = {"residual1", "output"};
  const BlockResult r = run_block(in, *att, o);
  CHECK(r.stages.size() == 2);
  CHECK(r.stage_ms.size() == block_stage_names().size());
  o.keep = {"nonsense"};
  CHECK_THROWS_AS(run_block(in, *att, o), InputError);
  auto bad = in;
  bad.modulation_row[3] = 99;
  CHECK_THROWS_AS(run_block(bad, *att, {}), InputError);
  bad = in;
  bad.weights["w_fc2"] = Tensor({3, 3}, DType::bf16);
  CHECK_THROWS_AS(run_block(bad, *att, {}), InputError);
  bad = in;
  bad.x.data[5] = std::nan("");
  CHECK_THROWS_AS(run_block(bad, *att, {}), InputError);
  CHECK_THROWS_AS(linear_mode_from_name("int4"), InputError);
}
