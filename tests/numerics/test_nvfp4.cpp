// NVFP4 quantiser and GEMM emulation (numerics.md "NVFP4 linear layer").
#include <algorithm>
#include <bit>
#include <cfloat>
#include <cstring>
#include <optional>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "catch.hpp"
#include "core/error.hpp"
#include "reference/numerics/convert.hpp"
#include "reference/numerics/nvfp4.hpp"
#ifdef _OPENMP
#include <omp.h>
#endif

using namespace ts::num;

namespace {

Nvfp4Options qopt(Nvfp4Recipe recipe, std::optional<float> static_amax = {}, std::optional<float> input_scale = {}) {
  Nvfp4Options o;
  o.recipe = recipe;
  o.static_amax = static_amax;
  o.input_scale = input_scale;
  return o;
}

Nvfp4GemmOptions gopt(bool fp64, bool bf16, const float* bias = nullptr) {
  Nvfp4GemmOptions o;
  o.fp64_accumulate = fp64;
  o.round_to_bf16 = bf16;
  o.bias = bias;
  return o;
}

std::vector<float> random_matrix(int64_t rows, int64_t cols, uint32_t seed, float scale = 1.0f) {
  std::mt19937 g(seed);
  std::normal_distribution<float> n(0.0f, 1.0f);
  std::uniform_int_distribution<int> e(-6, 6);
  std::vector<float> x(static_cast<size_t>(rows * cols));
  // Blocks of very different magnitude, with bf16 values as in real activations.
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      if (c % 16 == 0) scale = std::ldexp(1.0f, e(g));
      x[static_cast<size_t>(r * cols + c)] = bf16_round(n(g) * scale);
    }
  }
  return x;
}

int64_t ulp_distance(float a, float b) {
  const int64_t ia = std::bit_cast<int32_t>(a), ib = std::bit_cast<int32_t>(b);
  return ia > ib ? ia - ib : ib - ia;  // same sign, finite
}

// The spec's quantiser transcribed element by element (no packing, no
// blocking structure shared with the library): returns codes and scale codes.
struct Plain {
  std::vector<uint8_t> q, sb;
  float s_enc, s_dec;
};
Plain plain_quantize(const std::vector<float>& x, int64_t rows, int64_t cols, Nvfp4Recipe recipe) {
  float amax = 0.0f;
  for (float v : x) amax = std::max(amax, std::fabs(v));
  Plain p;
  if (recipe == Nvfp4Recipe::modelopt) {
    p.s_dec = amax > 0.0f ? amax / 2688.0f : 1.0f;
    p.s_enc = 1.0f / p.s_dec;
  } else {
    p.s_enc = amax > 0.0f ? std::min(2688.0f / amax, FLT_MAX) : 1.0f;
    p.s_dec = 1.0f / p.s_enc;
  }
  const int64_t nb = (cols + 15) / 16;
  p.q.assign(static_cast<size_t>(rows * cols), 0);
  p.sb.assign(static_cast<size_t>(rows * nb), 0);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t b = 0; b < nb; ++b) {
      float bamax = 0.0f;
      for (int64_t c = b * 16; c < std::min(cols, b * 16 + 16); ++c) bamax = std::max(bamax, std::fabs(x[r * cols + c]));
      float s;
      if (recipe == Nvfp4Recipe::te) s = std::min(bamax / 6.0f * p.s_enc, FLT_MAX);
      else if (recipe == Nvfp4Recipe::te_rcp6) s = bamax * (p.s_enc * (1.0f / 6.0f));
      else s = bamax / (6.0f * p.s_dec) == 0.0f ? 1.0f : bamax / (6.0f * p.s_dec);
      const uint8_t sc = e4m3_encode(std::min(s, 448.0f));
      p.sb[r * nb + b] = sc;
      const float sbf = e4m3_decode(sc);
      for (int64_t c = b * 16; c < std::min(cols, b * 16 + 16); ++c) {
        const float v = x[r * cols + c];
        float y;
        if (recipe == Nvfp4Recipe::modelopt) y = v == 0.0f ? v : v / (sbf * p.s_dec);
        else y = std::max(-6.0f, std::min(6.0f, v * std::min(1.0f / (sbf * p.s_dec), FLT_MAX)));
        p.q[r * cols + c] = e2m1_encode(y);
      }
    }
  }
  return p;
}

// Y in the emulation's documented order, one element at a time.
void plain_gemm(const Nvfp4Tensor& X, const Nvfp4Tensor& W, std::vector<float>& Y, bool fp64) {
  Y.assign(static_cast<size_t>(X.rows * W.rows), 0.0f);
  for (int64_t i = 0; i < X.rows; ++i) {
    for (int64_t j = 0; j < W.rows; ++j) {
      float accf = 0.0f;
      double accd = 0.0;
      for (int64_t b = 0; b < X.blocks_per_row; ++b) {
        float part = 0.0f;
        for (int64_t k = b * 16; k < std::min(X.cols, b * 16 + 16); ++k) {
          part += (e2m1_decode(X.code(i, k)) * X.block_scale(i, b)) * (e2m1_decode(W.code(j, k)) * W.block_scale(j, b));
        }
        accf += part;
        accd += part;
      }
      Y[i * W.rows + j] = fp64 ? static_cast<float>(accd * (static_cast<double>(X.s_dec) * W.s_dec))
                               : accf * (X.s_dec * W.s_dec);
    }
  }
}

}  // namespace

TEST_CASE("nvfp4: hand-computed quantisation and GEMM", "[nvfp4]") {
  // K = 40: block A (16 values), block B (all zero), block C (8 values + 8 padding).
  // amax 2.625 -> S_enc = 2688 / 2.625 = 1024, S_dec = 2^-10 (both exact).
  std::vector<float> x(40, 0.0f);
  x[0] = 2.625f; x[1] = 1.0f; x[2] = 0.6f; x[3] = -0.2f; x[4] = 0.1f; x[5] = 0.11f;
  x[32] = 0.0546875f;  // 7/128
  const Nvfp4Tensor t = nvfp4_quantize(x.data(), 1, 40);
  REQUIRE(t.blocks_per_row == 3);
  REQUIRE(t.row_bytes() == 24);
  CHECK(t.amax == 2.625f);
  CHECK(t.s_enc == 1024.0f);
  CHECK(t.s_dec == 0x1p-10f);
  // Block A: (2.625 / 6) * 1024 = 448 -> 0x7E; enc = 1 / 0.4375.
  CHECK(t.scale_code(0, 0) == 0x7E);
  CHECK(t.scale_code(0, 1) == 0x00);
  // Block C: (7/128 / 6) * 1024 = 9.33 -> E4M3 9 (0x51); 0.0546875 * 1024/9 = 6.2 -> saturates to 6.
  CHECK(t.scale_code(0, 2) == 0x51);
  CHECK(t.block_scale(0, 2) == 9.0f);
  // Elements of A scaled by 2.2857: 6, 2.29 -> 2, 1.37 -> 1.5, -0.457 -> -0.5, 0.229 -> 0, 0.251 -> 0.5.
  const uint8_t want_codes[6] = {0x7, 0x4, 0x3, 0x9, 0x0, 0x1};
  for (int k = 0; k < 6; ++k) CHECK(t.code(0, k) == want_codes[k]);
  CHECK(t.code(0, 32) == 0x7);
  for (int k = 33; k < 48; ++k) CHECK(t.code(0, k) == 0);  // padding and zeros
  CHECK(t.codes[0] == 0x47);  // element 0 in the low nibble, element 1 in the high one
  CHECK(t.codes[1] == 0x93);
  const float want_vals[6] = {2.625f, 0.875f, 0.65625f, -0.21875f, 0.0f, 0.21875f};
  for (int k = 0; k < 6; ++k) CHECK(t.value(0, k) == want_vals[k]);
  CHECK(t.value(0, 32) == 0.052734375f);  // 6 * 9 / 1024

  // Y = sum of squares: (2688^2 + 896^2 + 672^2 + 224^2 + 224^2 + 54^2) * 2^-20, exact in float.
  float y = 0.0f;
  nvfp4_gemm(t, t, &y, gopt(false, false));
  CHECK(y == 8583012.0f * 0x1p-20f);
  nvfp4_gemm(t, t, &y);
  CHECK(y == 8.1875f);  // bf16: 8.185398... -> 8 + 3/16
  const float bias = 1.0f;
  nvfp4_gemm(t, t, &y, gopt(true, true, &bias));
  CHECK(y == 9.1875f);
}

TEST_CASE("nvfp4: quantiser matches the spec formulas element by element", "[nvfp4]") {
  const int64_t shapes[][2] = {{3, 16}, {5, 40}, {2, 1}, {7, 33}, {4, 1344}, {9, 17}};
  uint32_t seed = 10;
  for (auto recipe : {Nvfp4Recipe::te, Nvfp4Recipe::te_rcp6, Nvfp4Recipe::modelopt}) {
    for (const auto& s : shapes) {
      const int64_t rows = s[0], cols = s[1];
      const std::vector<float> x = random_matrix(rows, cols, seed++);
      const Nvfp4Tensor t = nvfp4_quantize(x.data(), rows, cols, qopt(recipe));
      const Plain p = plain_quantize(x, rows, cols, recipe);
      INFO(nvfp4_recipe_name(recipe) << " " << rows << " x " << cols);
      CHECK(t.s_enc == p.s_enc);
      CHECK(t.s_dec == p.s_dec);
      CHECK(t.scales == p.sb);
      int64_t bad = 0;
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < cols; ++c) bad += t.code(r, c) != p.q[r * cols + c];
      CHECK(bad == 0);
      const std::vector<double> xd(x.begin(), x.end());
      const Nvfp4Tensor td = nvfp4_quantize(xd.data(), rows, cols, qopt(recipe));
      CHECK(td.codes == t.codes);
      CHECK(td.scales == t.scales);
      // Dequantised values are close to the input: rounding costs at most one
      // unit of sb * S_dec (half the step from 4 to 6), saturation after a
      // block scale rounded down at most 6 / 16 of one.
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < cols; ++c) {
          const float v = t.value(r, c);
          REQUIRE(std::isfinite(v));
          CHECK(std::fabs(v - x[r * cols + c]) <= 1.0001f * t.block_scale(r, c / 16) * t.s_dec + 1e-30f);
        }
    }
  }
}

TEST_CASE("nvfp4: amax = 0 gives zeros and no NaN", "[nvfp4]") {
  const std::vector<float> x(3 * 20, 0.0f);
  for (auto recipe : {Nvfp4Recipe::te, Nvfp4Recipe::te_rcp6, Nvfp4Recipe::modelopt}) {
    const Nvfp4Tensor t = nvfp4_quantize(x.data(), 3, 20, qopt(recipe));
    CHECK(t.s_enc == 1.0f);
    CHECK(t.s_dec == 1.0f);
    for (uint8_t c : t.codes) CHECK(c == 0);
    // ModelOpt gives an all-zero block the scale 1.0 (E4M3 0x38); TE gives 0.
    for (uint8_t s : t.scales) CHECK(s == (recipe == Nvfp4Recipe::modelopt ? 0x38 : 0x00));
    std::vector<float> y(9, -1.0f);
    nvfp4_gemm(t, t, y.data());
    for (float v : y) CHECK(v == 0.0f);
  }
  // S_enc = 448 * 6 / Inf = 0 underflows: falls back to 1.
  const float one = 1.0f;
  const Nvfp4Tensor inf_amax = nvfp4_quantize(&one, 1, 1, qopt(Nvfp4Recipe::te, INFINITY));
  CHECK(inf_amax.s_enc == 1.0f);
  CHECK(std::isfinite(inf_amax.value(0, 0)));
}

TEST_CASE("nvfp4: static amax below the data saturates at the static range", "[nvfp4]") {
  std::vector<float> x(32);
  for (int k = 0; k < 32; ++k) x[k] = (k % 2 ? -1.0f : 1.0f) * (k < 16 ? 10.0f : 0.5f);
  for (auto recipe : {Nvfp4Recipe::te, Nvfp4Recipe::modelopt}) {
    INFO(nvfp4_recipe_name(recipe));
    const Nvfp4Tensor t = nvfp4_quantize(x.data(), 1, 32, qopt(recipe, 1.0f));
    CHECK(t.amax == 1.0f);
    CHECK(t.scale_code(0, 0) == 0x7E);  // (10 / 6) * 2688 = 4480 -> clamped to 448
    for (int k = 0; k < 16; ++k) {
      CHECK(t.code(0, k) == (k % 2 ? 0xF : 0x7));         // +-6
      CHECK(std::fabs(std::fabs(t.value(0, k)) - 1.0f) <= 2e-7f);  // +-amax
    }
    // The 0.5 block is in range: (0.5 / 6) * 2688 = 224, enc = 12: 0.5 -> 6 -> 6 * 224 / 2688.
    CHECK(t.block_scale(0, 1) == 224.0f);
    for (int k = 16; k < 32; ++k) CHECK(std::fabs(std::fabs(t.value(0, k)) - 0.5f) <= 1e-7f);
  }
  // input_scale: te uses S_enc = 1 / input_scale, modelopt the decode scale itself.
  const Nvfp4Tensor te = nvfp4_quantize(x.data(), 1, 32, qopt(Nvfp4Recipe::te, {}, 1.0f / 2688.0f));
  CHECK(te.s_enc == 1.0f / (1.0f / 2688.0f));
  const Nvfp4Tensor mo = nvfp4_quantize(x.data(), 1, 32, qopt(Nvfp4Recipe::modelopt, {}, 0.5f));
  CHECK(mo.s_dec == 0.5f);
}

TEST_CASE("nvfp4: a block whose scale underflows dequantises to 0 without NaN", "[nvfp4]") {
  std::vector<float> x(32, 0.0f);
  x[0] = 1e4f;
  x[16] = 1e-6f;
  x[17] = -2e-6f;
  for (auto recipe : {Nvfp4Recipe::te, Nvfp4Recipe::modelopt}) {
    INFO(nvfp4_recipe_name(recipe));
    const Nvfp4Tensor t = nvfp4_quantize(x.data(), 1, 32, qopt(recipe));
    CHECK(t.scale_code(0, 1) == 0x00);  // 1e-6 / 6 * 0.2688 is far below 2^-10
    // The element scale is FLT_MAX (te) or a division by 0 (modelopt): the
    // nonzero elements saturate to +-6, the zeros stay 0, and all dequantise to 0.
    CHECK(t.code(0, 16) == 0x7);
    CHECK(t.code(0, 17) == 0xF);
    CHECK(t.code(0, 18) == 0x0);
    for (int k = 16; k < 32; ++k) CHECK(t.value(0, k) == 0.0f);
    const std::vector<float> ones(32, 1.0f);
    const Nvfp4Tensor w = nvfp4_quantize(ones.data(), 1, 32, qopt(recipe));
    float y = 0.0f;
    nvfp4_gemm(t, w, &y, gopt(false, false));
    CHECK(std::isfinite(y));
    CHECK(y == Approx(1e4).epsilon(0.02));
  }
}

TEST_CASE("nvfp4: te and modelopt differ by at most one ulp of scale, only at ties", "[nvfp4]") {
  // Global decode scale: 1 / (2688 / amax) against amax / 2688.
  std::mt19937 g(7);
  std::uniform_real_distribution<float> u(-60.0f, 60.0f);
  int64_t differ = 0, n = 0;
  for (int i = 0; i < 100000; ++i) {
    const float amax = std::exp2(u(g));
    const Nvfp4Tensor a = nvfp4_quantize(&amax, 1, 1, qopt(Nvfp4Recipe::te));
    const Nvfp4Tensor b = nvfp4_quantize(&amax, 1, 1, qopt(Nvfp4Recipe::modelopt));
    const int64_t d = ulp_distance(a.s_dec, b.s_dec);
    REQUIRE(d <= 1);
    differ += d;
    ++n;
  }
  INFO("global decode scales differing by one ulp: " << differ << " of " << n);
  CHECK(differ > 0);

  // On random bf16 data the two recipes practically never disagree: a
  // product lands within an ulp of an E2M1 or E4M3 midpoint about once in 2^22.
  {
    const int64_t rows = 256, cols = 1024;
    const std::vector<float> x = random_matrix(rows, cols, 99);
    const Nvfp4Tensor te = nvfp4_quantize(x.data(), rows, cols, qopt(Nvfp4Recipe::te));
    const Nvfp4Tensor mo = nvfp4_quantize(x.data(), rows, cols, qopt(Nvfp4Recipe::modelopt));
    int64_t differ_codes = 0;
    for (size_t i = 0; i < te.codes.size(); ++i) differ_codes += te.codes[i] != mo.codes[i];
    CHECK(differ_codes <= 2);
    CHECK(te.scales == mo.scales);
  }

  // Where they differ: tensors of two blocks built to sit on the ties. Block 0
  // holds the global amax G; block 1's amax B puts (B / 6) * S_enc on an E4M3
  // midpoint; its other elements sit on E2M1 midpoints (times te's decode
  // scale), nudged by -1, 0, +1 ulp. A code may differ only by one step, and
  // only where te's float32 value is within 3 ulps of the midpoint.
  const float e4m3_mids[] = {9.5f, 17.0f, 40.0f, 104.0f, 208.0f, 1.0625f, 0.59375f, 300.0f};
  const float e2m1_mids[] = {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f};
  int64_t scale_diff = 0, elem_diff = 0, elems = 0;
  for (int i = 0; i < 4000; ++i) {
    const float G = std::exp2(u(g) / 3.0f);
    const float B = e4m3_mids[i % 8] * G / 448.0f;
    std::vector<float> x(32, 0.0f);
    x[0] = G;
    x[16] = B;
    const Nvfp4Tensor probe = nvfp4_quantize(x.data(), 1, 32, qopt(Nvfp4Recipe::te));
    const float d = probe.block_scale(0, 1) * probe.s_dec;
    for (int k = 17; k < 32; ++k) {
      const float v = e2m1_mids[(i + k) % 7] * d;
      const int nudge = (k + i) % 3 - 1;
      x[k] = nudge == 0 ? v : std::nextafter(v, nudge > 0 ? INFINITY : 0.0f);
      if (k % 2) x[k] = -x[k];
    }
    const Nvfp4Tensor te = nvfp4_quantize(x.data(), 1, 32, qopt(Nvfp4Recipe::te));
    const Nvfp4Tensor mo = nvfp4_quantize(x.data(), 1, 32, qopt(Nvfp4Recipe::modelopt));
    REQUIRE(ulp_distance(te.s_dec, mo.s_dec) <= 1);
    CHECK(te.scale_code(0, 0) == mo.scale_code(0, 0));
    const uint8_t ca = te.scale_code(0, 1), cb = mo.scale_code(0, 1);
    if (ca != cb) {
      ++scale_diff;
      REQUIRE(std::abs(int(ca) - int(cb)) == 1);
      const float mid = 0.5f * (e4m3_decode(ca) + e4m3_decode(cb));
      CHECK(ulp_distance((B / 6.0f) * te.s_enc, mid) <= 3);
      continue;
    }
    const float enc = std::min(1.0f / (te.block_scale(0, 1) * te.s_dec), FLT_MAX);
    for (int k = 0; k < 32; ++k) {
      ++elems;
      const uint8_t qa = te.code(0, k), qb = mo.code(0, k);
      if (qa == qb) continue;
      ++elem_diff;
      REQUIRE(k > 16);
      REQUIRE((qa & 8) == (qb & 8));
      REQUIRE(std::abs(int(qa & 7) - int(qb & 7)) == 1);
      const float mid = 0.5f * (std::fabs(e2m1_decode(qa)) + std::fabs(e2m1_decode(qb)));
      CHECK(ulp_distance(std::fabs(x[k] * enc), mid) <= 3);
    }
  }
  INFO("block scales differing: " << scale_diff << " of 4000, elements differing: " << elem_diff << " of " << elems);
  CHECK(scale_diff > 0);
  CHECK(elem_diff > 0);
}

TEST_CASE("nvfp4: te_rcp6 block scales are te's or one code away", "[nvfp4]") {
  const std::vector<float> x = random_matrix(128, 512, 5);
  const Nvfp4Tensor a = nvfp4_quantize(x.data(), 128, 512, qopt(Nvfp4Recipe::te));
  const Nvfp4Tensor b = nvfp4_quantize(x.data(), 128, 512, qopt(Nvfp4Recipe::te_rcp6));
  CHECK(a.s_enc == b.s_enc);
  for (size_t i = 0; i < a.scales.size(); ++i) REQUIRE(std::abs(int(a.scales[i]) - int(b.scales[i])) <= 1);
}

TEST_CASE("nvfp4: GEMM equals the same-order plain loop and dequantise-then-fp64", "[nvfp4]") {
  const int64_t shapes[][3] = {{1, 1, 1}, {7, 13, 40}, {6, 8, 16}, {33, 17, 100}, {13, 29, 1344}, {0, 5, 16}, {5, 3, 0}};
  uint32_t seed = 1000;
  for (const auto& s : shapes) {
    const int64_t m = s[0], n = s[1], k = s[2];
    INFO(m << " x " << n << " x " << k);
    const std::vector<float> xa = random_matrix(m, k, seed++), wa = random_matrix(n, k, seed++, 0.02f);
    const Nvfp4Tensor X = nvfp4_quantize(xa.data(), m, k);
    const Nvfp4Tensor W = nvfp4_quantize(wa.data(), n, k);
    std::vector<double> ref(static_cast<size_t>(m * n));
    nvfp4_gemm_reference(X, W, ref.data());
    std::vector<double> xd(static_cast<size_t>(m * k)), wd(static_cast<size_t>(n * k));
    nvfp4_dequantize(X, xd.data());
    nvfp4_dequantize(W, wd.data());
    for (bool fp64 : {false, true}) {
      std::vector<float> y(static_cast<size_t>(m * n)), plain;
      nvfp4_gemm(X, W, y.data(), gopt(fp64, false));
      plain_gemm(X, W, plain, fp64);
      int64_t bad_bits = 0, bad_bound = 0;
      double num = 0.0, den = 0.0;
      for (int64_t i = 0; i < m; ++i) {
        for (int64_t j = 0; j < n; ++j) {
          const float v = y[i * n + j];
          bad_bits += std::bit_cast<uint32_t>(v) != std::bit_cast<uint32_t>(plain[i * n + j]);
          double mag = 0.0;
          for (int64_t kk = 0; kk < k; ++kk) mag += std::fabs(xd[i * k + kk] * wd[j * k + kk]);
          const double bound = (X.blocks_per_row + 2) * 0x1p-24 * mag * 1.0001;
          bad_bound += std::fabs(v - ref[i * n + j]) > bound;
          num += (v - ref[i * n + j]) * (v - ref[i * n + j]);
          den += ref[i * n + j] * ref[i * n + j];
        }
      }
      INFO("fp64 accumulation " << fp64);
      CHECK(bad_bits == 0);
      CHECK(bad_bound == 0);
      if (den > 0) CHECK(std::sqrt(num / den) < (fp64 ? 1e-7 : 2e-6));
      // bf16 output is the float32 output rounded.
      std::vector<float> yb(static_cast<size_t>(m * n));
      nvfp4_gemm(X, W, yb.data(), gopt(fp64, true));
      for (size_t i = 0; i < yb.size(); ++i) REQUIRE(yb[i] == bf16_round(y[i]));
    }
  }
}

TEST_CASE("nvfp4: GEMM bits do not depend on the thread count", "[nvfp4]") {
#ifdef _OPENMP
  const std::vector<float> xa = random_matrix(70, 200, 3), wa = random_matrix(45, 200, 4);
  const Nvfp4Tensor X = nvfp4_quantize(xa.data(), 70, 200);
  const Nvfp4Tensor W = nvfp4_quantize(wa.data(), 45, 200);
  std::vector<float> y1(70 * 45), y2(70 * 45);
  const int saved = omp_get_max_threads();
  omp_set_num_threads(1);
  nvfp4_gemm(X, W, y1.data(), gopt(false, false));
  omp_set_num_threads(3);
  nvfp4_gemm(X, W, y2.data(), gopt(false, false));
  omp_set_num_threads(saved);
  CHECK(std::memcmp(y1.data(), y2.data(), y1.size() * sizeof(float)) == 0);
#else
  SUCCEED("built without OpenMP");
#endif
}

TEST_CASE("nvfp4: bad input is refused with InputError", "[nvfp4]") {
  const std::vector<float> x(32, 1.0f);
  CHECK_THROWS_AS(nvfp4_quantize(x.data(), 1, 32, qopt(Nvfp4Recipe::te, 1.0f, 1.0f)), ts::InputError);
  CHECK_THROWS_AS(nvfp4_quantize(x.data(), 1, 32, qopt(Nvfp4Recipe::te, {}, 0.0f)), ts::InputError);
  CHECK_THROWS_AS(nvfp4_quantize(x.data(), 1, 32, qopt(Nvfp4Recipe::te, {}, NAN)), ts::InputError);
  CHECK_THROWS_AS(nvfp4_quantize(x.data(), 1, 32, qopt(Nvfp4Recipe::te, -1.0f)), ts::InputError);
  CHECK_THROWS_AS(nvfp4_quantize(x.data(), -1, 32), ts::InputError);
  CHECK_THROWS_AS(nvfp4_recipe_from_name("nvidia"), ts::InputError);
  CHECK(nvfp4_recipe_from_name("modelopt") == Nvfp4Recipe::modelopt);
  const Nvfp4Tensor a = nvfp4_quantize(x.data(), 1, 32);
  const Nvfp4Tensor b = nvfp4_quantize(x.data(), 2, 16);
  std::vector<float> y(2);
  CHECK_THROWS_AS(nvfp4_gemm(a, b, y.data()), ts::InputError);
}
