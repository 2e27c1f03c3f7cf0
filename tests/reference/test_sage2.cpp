// sage2 emulation: identity switches, K smoothing, zero V channels, the P
// bound, scale layouts, rounding recipes, accumulation rounding, determinism.
#include <omp.h>

#include <bit>
#include <cmath>
#include <random>
#include <limits>

#include "catch.hpp"
#include "core/error.hpp"
#include "reference/attention_sage2.hpp"
#include "reference/sage2_arith.hpp"
#include "reference/numerics/convert.hpp"
#include "test_sage2_inputs.hpp"

using namespace ts;
using ts::testing::make_inputs;
using ts::testing::rel_l2;

namespace {

AttentionResult run_sage2(const ts::testing::Inputs& in, const std::string& spec) {
  BackendParams p = BackendParams::parse(spec);
  auto b = make_sage2_backend(p);
  return b->run(in.problem());
}

}  // namespace

TEST_CASE("sage2 with every quantisation step off is float32 dense attention") {
  const auto in = make_inputs(200, 2, 64, 1);
  const Tensor exact = ts::testing::naive_attention(in);
  for (const char* smooth : {"off", "on"}) {
    const std::string spec =
        std::string("sage2:accum=fp32,quant_qk=off,quant_v=off,round_p=off,round_out=off,smooth_k=") +
        smooth;
    const AttentionResult r = run_sage2(in, spec);
    REQUIRE(r.out.dtype == DType::f32);
    const double e = rel_l2(r.out, exact);
    INFO(spec << " rel_l2 " << e);
    CHECK(e < 2e-6);
  }
  // The default emulation does quantise: far further from exact than float32.
  const double e_q = rel_l2(run_sage2(in, "sage2").out, exact);
  CHECK(e_q > 1e-3);
  CHECK(e_q < 5e-2);
}

TEST_CASE("sage2 K smoothing shifts each score row by a constant and only changes quantisation error") {
  const auto in = make_inputs(256, 2, 64, 2);
  const Tensor exact = ts::testing::naive_attention(in);
  // Unquantised: smoothing is a per-row shift of the scores, cancelled by softmax.
  const auto off = run_sage2(in, "sage2:accum=fp32,quant_qk=off,quant_v=off,round_p=off,round_out=off,smooth_k=off");
  const auto on = run_sage2(in, "sage2:accum=fp32,quant_qk=off,quant_v=off,round_p=off,round_out=off,smooth_k=on");
  CHECK(rel_l2(on.out, off.out) < 1e-6);
  // Quantised: keys with a per-channel bias quantise far better once smoothed.
  const double e_on = rel_l2(run_sage2(in, "sage2:quant_v=off,round_p=off,accum=fp32").out, exact);
  const double e_off =
      rel_l2(run_sage2(in, "sage2:quant_v=off,round_p=off,accum=fp32,smooth_k=off").out, exact);
  INFO("smoothed " << e_on << " unsmoothed " << e_off);
  CHECK(e_on < e_off);
  // km is the bf16-rounded float32 mean of K per head and channel.
  const auto d = run_sage2(in, "sage2:dump=on");
  const Tensor& km = d.intermediates.at("km");
  REQUIRE(km.shape == std::vector<int64_t>{2, 64});
  for (int64_t h = 0; h < 2; ++h)
    for (int64_t c = 0; c < 64; ++c) {
      float sum = 0;
      for (int64_t s = 0; s < 256; ++s) sum += static_cast<float>(in.k.data[(s * 2 + h) * 64 + c]);
      CHECK(km.data[h * 64 + c] == num::bf16_round(sum / 256.0f));
    }
}

TEST_CASE("sage2 all-zero V channel gives exactly 0 in that channel and no NaN") {
  auto in = make_inputs(160, 2, 32, 3);
  for (int64_t s = 0; s < 160; ++s) in.v.data[(s * 2 + 1) * 32 + 5] = 0.0;  // head 1, channel 5
  const Tensor exact = ts::testing::naive_attention(in);
  for (const char* preset : {"sm121", "sm89", "sm90"}) {
    const auto r = run_sage2(in, std::string("sage2:dump=on,preset=") + preset);
    INFO(preset);
    CHECK(ts::testing::all_finite(r.out));
    CHECK(r.stats.at("v_zero_channels").get<int64_t>() == 1);
    CHECK(r.intermediates.at("v_scale").data[1 * 32 + 5] == 0.0);
    for (int64_t s = 0; s < 160; ++s) {
      CHECK(r.out.data[(s * 2 + 1) * 32 + 5] == 0.0);
      CHECK(r.intermediates.at("v_fp8").data[(s * 2 + 1) * 32 + 5] == 0.0);
    }
    CHECK(rel_l2(r.out, exact) < 5e-2);
  }
}

TEST_CASE("sage2 P fed to P·V is FP8, never above 448, and reaches 448 on every row") {
  const auto in = make_inputs(300, 2, 64, 4);
  for (const char* preset : {"sm121", "sm90"}) {
    const auto r = run_sage2(in, std::string("sage2:dump=on,dump_qblock=1,dump_head=1,preset=") + preset);
    const Tensor& p = r.intermediates.at("p_fp8");
    const int64_t rows = std::string(preset) == "sm90" ? 64 : 128;
    REQUIRE(p.shape == std::vector<int64_t>{rows, 300});
    for (int64_t i = 0; i < rows; ++i) {
      double mx = 0;
      for (int64_t j = 0; j < 300; ++j) {
        const double x = p.data[i * 300 + j];
        REQUIRE(x >= 0.0);
        REQUIRE(x <= 448.0);
        REQUIRE(num::e4m3_round(static_cast<float>(x)) == x);
        mx = std::max(mx, x);
      }
      // The key holding a row's maximum enters at exp2(8.807) -> 448.
      CHECK(mx == 448.0);
    }
  }
}

TEST_CASE("sage2 scale arrays have the kernels' padded shapes and values") {
  const int64_t S = 200, H = 2, D = 32;
  const auto in = make_inputs(S, H, D, 5);
  struct Case {
    const char* preset;
    int64_t nq, nk;
  };
  // per_warp Q [H, ceil(S/BLKQ)·BLKQ/WARPQ], K [H, ceil(S/BLKK)];
  // per_thread Q [H, ceil(S/BLKQ)·(BLKQ/WARPQ)·8], K [H, ceil(S/BLKK)·(BLKK/WARPK)·4].
  for (Case c : {Case{"sm121", 2 * 4, 4}, Case{"sm89", 2 * 4 * 8, 4 * 1 * 4},
                 Case{"sm90", 4 * 4 * 8, 2 * 1 * 4}}) {
    INFO(c.preset);
    const auto r = run_sage2(in, std::string("sage2:dump=on,preset=") + c.preset);
    const Tensor& qs = r.intermediates.at("q_scale");
    const Tensor& ks = r.intermediates.at("k_scale");
    CHECK(qs.shape == std::vector<int64_t>{H, c.nq});
    CHECK(ks.shape == std::vector<int64_t>{H, c.nk});
    const bool warp = std::string(c.preset) == "sm121";
    const int64_t warpq = std::string(c.preset) == "sm90" ? 16 : 32;
    const int64_t warpk = std::string(c.preset) == "sm90" ? 128 : 64;
    const Tensor& km = r.intermediates.at("km");
    for (int64_t h = 0; h < H; ++h) {
      // The kernels' token groups, enumerated as numerics.md states them.
      auto check_groups = [&](bool query, const Tensor& scales, const Tensor& codes) {
        const int64_t n = scales.dim(1);
        const int64_t per_group_warp = warp ? 1 : (query ? 8 : 4);
        const int64_t warp_len = warp ? (query ? 32 : 64) : (query ? warpq : warpk);
        for (int64_t g = 0; g < n; ++g) {
          std::vector<int64_t> toks;
          const int64_t base = (g / per_group_warp) * warp_len, t = g % per_group_warp;
          for (int64_t o = 0; o < warp_len; ++o) {
            const int64_t s = base + o;
            const bool member = warp || (query ? (o % 8 == t) : ((o % 8) / 2 == t));
            if (member && s < S) toks.push_back(s);
          }
          auto value = [&](int64_t s, int64_t d) {
            const Tensor& src = query ? in.q : in.k;
            const float x = static_cast<float>(src.data[(s * H + h) * D + d]);
            if (query) return x;
            const float diff = x - static_cast<float>(km.data[h * D + d]);
            return warp ? diff : num::bf16_round(diff);
          };
          float amax = warp ? 1e-7f : 0.0f;
          for (int64_t s : toks)
            for (int64_t d = 0; d < D; ++d) amax = std::max(amax, std::fabs(value(s, d)));
          // The kernels divide by multiplying with a reciprocal (fast math, Triton div.full).
          const float r127 = 1.0f / 127.0f;
          const float expect = warp ? amax * r127 : std::fma(amax, r127, 1e-7f);
          REQUIRE(scales.data[h * n + g] == expect);
          for (int64_t s : toks)
            for (int64_t d = 0; d < D; ++d) {
              const float x = value(s, d);
              const int8_t code = warp ? num::int8_rni_sat(x * (127.0f * sage2::gpu_rcp(amax)))
                                       : num::int8_round_half_away_trunc(x * sage2::gpu_rcp(expect));
              REQUIRE(codes.data[(s * H + h) * D + d] == code);
            }
        }
      };
      check_groups(true, qs, r.intermediates.at("q_int8"));
      check_groups(false, ks, r.intermediates.at("k_int8"));
    }
  }
}

TEST_CASE("sage2 quantiser rounding recipes on hand cases") {
  // per_warp: amax 127 makes the multiplier exactly 1; ties go to even.
  {
    const float x[] = {127.0f, 2.5f, -2.5f, 3.5f, 0.5f, -0.5f, 1.5f, -126.5f};
    int8_t c[8];
    CHECK(sage2::quant_group_per_warp(x, 8, c) == 1.0f);
    const int8_t expect[] = {127, 2, -2, 4, 0, 0, 2, -126};
    for (int i = 0; i < 8; ++i) CHECK(int(c[i]) == int(expect[i]));
  }
  // per_thread: scale = fma(63.5, rcp(127), 1e-7); find x with x * rcp(scale)
  // == 2.5 exactly (the kernel multiplies by the reciprocal), which the Triton
  // recipe rounds away from zero.
  {
    const float scale = std::fma(63.5f, 1.0f / 127.0f, 1e-7f);
    const float mult = sage2::gpu_rcp(scale);
    // Floats near 2.5*scale, nearest first, until one lands on the tie.
    float x = 2.5f * scale, lo = x, hi = x;
    for (int i = 0; i < 64 && x * mult != 2.5f; ++i) {
      lo = std::nextafter(lo, 0.0f);
      hi = std::nextafter(hi, 4.0f);
      x = lo * mult == 2.5f ? lo : hi;
    }
    REQUIRE(x * mult == 2.5f);
    const float xs[] = {63.5f, x, -x, 0.0f};
    int8_t c[4];
    CHECK(sage2::quant_group_per_thread(xs, 4, c) == scale);
    CHECK(int(c[0]) == 127);
    CHECK(int(c[1]) == 3);
    CHECK(int(c[2]) == -3);
    CHECK(int(c[3]) == 0);
    // The same tie through quantize_int8, the path the emulation runs.
    sage2::HeadMajor hm;
    hm.H = 1, hm.S = 1, hm.D = 4, hm.x = {63.5f, x, -x, 0.0f};
    const auto t = sage2::quantize_int8(hm, {sage2::Granularity::per_thread, true, 128, 32});
    CHECK(t.scales[0] == scale);
    CHECK(int(t.codes[1]) == 3);
    CHECK(int(t.codes[2]) == -3);
  }
  // per_warp ties through quantize_int8: to even, as cvt.rni.
  {
    sage2::HeadMajor hm;
    hm.H = 1, hm.S = 1, hm.D = 8, hm.x = {127.0f, 2.5f, -2.5f, 3.5f, 0.5f, -0.5f, 1.5f, -126.5f};
    const auto t = sage2::quantize_int8(hm, {sage2::Granularity::per_warp, true, 128, 32});
    const int8_t expect[] = {127, 2, -2, 4, 0, 0, 2, -126};
    for (int i = 0; i < 8; ++i) CHECK(int(t.codes[i]) == int(expect[i]));
  }
  // An empty (padded) group: per_warp 1e-7*rcp(127), per_thread 1e-7.
  {
    int8_t c[1];
    const float z[] = {0.0f};
    CHECK(sage2::quant_group_per_warp(z, 1, c) == 1e-7f * (1.0f / 127.0f));
    CHECK(sage2::quant_group_per_thread(z, 1, c) == 1e-7f);
  }
}

TEST_CASE("sage2 gpu_rcp is the H200's rcp.approx on bf16 mantissas, correctly rounded elsewhere") {
  // Measured: 1/(1 + 4/128) comes out one ulp below the correctly rounded
  // value, 1/(1 + 6/128) one above, 1/(1 + 5/128) equal to it.
  const float cr4 = 1.0f / (1.0f + 4.0f / 128.0f), cr6 = 1.0f / (1.0f + 6.0f / 128.0f);
  CHECK(sage2::gpu_rcp(1.0f + 4.0f / 128.0f) == std::nextafter(cr4, 0.0f));
  CHECK(sage2::gpu_rcp(1.0f + 6.0f / 128.0f) == std::nextafter(cr6, 1.0f));
  CHECK(sage2::gpu_rcp(1.0f + 5.0f / 128.0f) == 1.0f / (1.0f + 5.0f / 128.0f));
  // The constants the quantisers divide by: the correctly rounded reciprocals.
  for (float c : {127.0f, 2.25f, 448.0f, 1.0f}) CHECK(sage2::gpu_rcp(c) == 1.0f / c);
  // Every binade and sign scales the same table.
  for (int m = 0; m < 128; ++m) {
    const float x = 1.0f + static_cast<float>(m) / 128.0f;
    const float r = sage2::gpu_rcp(x);
    CHECK(std::fabs(r - 1.0f / x) <= std::nextafter(r, 2.0f) - r);  // within an ulp
    CHECK(sage2::gpu_rcp(std::ldexp(x, 40)) == std::ldexp(r, -40));
    CHECK(sage2::gpu_rcp(-std::ldexp(x, -90)) == -std::ldexp(r, 90));
  }
  // Not a bf16 mantissa: correctly rounded.
  const float odd = 1.0f + std::ldexp(1.0f, -20);
  CHECK(sage2::gpu_rcp(odd) == 1.0f / odd);
}

TEST_CASE("sage2 accumulation roundings are single roundings of the exact sum") {
  // 1 + 2^-11 + 2^-40 lies just above an fp16 tie: float32 first would drop
  // the 2^-40 and round the tie to even (1.0); correct rounding gives 1 + 2^-10.
  CHECK(sage2::fp16_of_double(1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40)) ==
        1.0f + std::ldexp(1.0f, -10));
  CHECK(sage2::fp16_of_double(1.0 + std::ldexp(1.0, -11)) == 1.0f);
  CHECK(sage2::fp16_of_double(70000.0) == std::numeric_limits<float>::infinity());
  CHECK(sage2::fp16_of_double(65519.99) == 65504.0f);
  CHECK(sage2::fp16_of_double(-65520.0) == -std::numeric_limits<float>::infinity());
  CHECK(sage2::fp16_of_double(std::ldexp(3.0, -26)) == std::ldexp(1.0f, -24));  // subnormal tie -> even
  CHECK(sage2::fp16_of_double(std::ldexp(5.0, -26)) == std::ldexp(1.0f, -24));
  // Against an independent oracle: round to odd into float32, then convert.hpp's
  // float32 -> fp16 (exact single rounding, 13 spare bits), on random doubles
  // spanning fp16's subnormal to overflow range.
  std::mt19937_64 gen(42);
  for (int i = 0; i < 200000; ++i) {
    const double m = static_cast<double>(gen() >> 11) * 0x1p-53;  // [0, 1)
    const int e = static_cast<int>(gen() % 46) - 28;
    const double x = std::ldexp(m, e) * ((gen() & 1) ? -1.0 : 1.0);
    float f = static_cast<float>(x);
    if (static_cast<double>(f) != x && (std::bit_cast<uint32_t>(f) & 1u) == 0u)
      f = std::nextafter(f, static_cast<double>(f) < x ? 1e30f : -1e30f);
    const float expect = num::fp16_round(f);
    REQUIRE(sage2::fp16_of_double(x) == expect);
  }
  // (1 + 2^-24) + 2^-80: float64 addition loses 2^-80 and leaves a float32 tie.
  CHECK(sage2::f32_of_sum(1.0 + std::ldexp(1.0, -24), std::ldexp(1.0, -80)) ==
        1.0f + std::ldexp(1.0f, -23));
  CHECK(sage2::f32_of_sum(1.0 + std::ldexp(1.0, -24), -std::ldexp(1.0, -80)) == 1.0f);
  CHECK(sage2::f32_of_sum(1.0, std::ldexp(1.0, -24)) == 1.0f);
  CHECK(sage2::f32_of_sum(1.0, 3.0 * std::ldexp(1.0, -24)) == 1.0f + std::ldexp(1.0f, -22));
}

TEST_CASE("sage2 accumulation modes differ from each other and stay Sage-like") {
  const auto in = make_inputs(256, 2, 64, 6);
  const Tensor exact = ts::testing::naive_attention(in);
  const auto a = run_sage2(in, "sage2:accum=fp32+fp16");
  const auto b = run_sage2(in, "sage2:accum=fp32,scale_max=2.25");
  const auto c = run_sage2(in, "sage2:accum=fp32+fp32,scale_max=2.25");
  CHECK(rel_l2(a.out, b.out) > 0);
  CHECK(rel_l2(a.out, b.out) < 1e-2);
  CHECK(rel_l2(b.out, c.out) < 1e-2);
  for (const auto* r : {&a, &b, &c}) CHECK(rel_l2(r->out, exact) < 5e-2);
}

TEST_CASE("sage2 gives the same bits at 1 and 2 threads") {
  const auto in = make_inputs(300, 3, 64, 7);
  for (const char* preset : {"sm121", "sm89", "sm90"}) {
    const int saved = omp_get_max_threads();
    omp_set_num_threads(1);
    const auto one = run_sage2(in, std::string("sage2:preset=") + preset);
    omp_set_num_threads(2);
    const auto two = run_sage2(in, std::string("sage2:preset=") + preset);
    omp_set_num_threads(saved);
    CHECK(one.out.data == two.out.data);
  }
}

TEST_CASE("sage2 factory: names, presets and bad parameters") {
  auto make = [](const std::string& spec) {
    BackendParams p = BackendParams::parse(spec);
    return make_sage2_backend(p);
  };
  CHECK(make("sage2")->name() == "sage2_sm121");
  CHECK(make("sage2:preset=sm90")->name() == "sage2_sm90");
  CHECK(make("sage2:accum=fp32")->name() == "sage2_sm121_accum-fp32");
  CHECK(make("sage2:preset=sm121,accum=fp32+fp16")->name() == "sage2_sm121");
  const auto p90 = make("sage2:preset=sm90")->params();
  CHECK(p90.at("granularity") == "per_thread");
  CHECK(p90.at("blkq") == 64);
  CHECK(p90.at("key_block") == 128);
  CHECK(p90.at("accum") == "fp32+fp32");
  CHECK(p90.at("scale_max").get<double>() == 448.0);
  CHECK(make("sage2:accum=fp32")->params().at("scale_max").get<double>() == 448.0);
  REQUIRE_THROWS_AS(make("sage2:presett=sm90"), InputError);
  REQUIRE_THROWS_AS(make("sage2:preset=sm70"), InputError);
  REQUIRE_THROWS_AS(make("sage2:key_block=96"), InputError);
  REQUIRE_THROWS_AS(make("sage2:scale_max=-1"), InputError);
  REQUIRE_THROWS_AS(make("sage2:blkq=100"), InputError);
  const auto in = make_inputs(64, 1, 16, 8);
  REQUIRE_THROWS_AS(make("sage2:dump=on,dump_head=3")->run(in.problem()), InputError);
}
