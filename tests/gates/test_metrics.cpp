// Metrics against hand-computed values, undefined relative metrics, NaN,
// ulp distances at each storage type, breakdowns and thread-count determinism.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "catch.hpp"
#include "core/error.hpp"
#include "gates/metrics.hpp"

using namespace ts;

namespace {
Tensor vec(std::vector<double> v, DType t = DType::f64) {
  Tensor x({static_cast<int64_t>(v.size())}, t);
  x.data = std::move(v);
  return x;
}
}  // namespace

TEST_CASE("metrics match hand-computed values") {
  const auto a = vec({1, 2, 3, 4}), b = vec({1, 2, 2, 4});
  const MetricSet m = compute_metrics(a, b);
  REQUIRE(m.count == 4);
  REQUIRE(m.rel_l2.has_value());
  CHECK(*m.rel_l2 == Approx(0.2).epsilon(1e-15));  // ||(0,0,1,0)|| / ||b|| = 1/5
  CHECK(*m.cosine == Approx(27.0 / (std::sqrt(30.0) * 5.0)).epsilon(1e-15));
  CHECK(*m.rel_l1 == Approx(1.0 / 9.0).epsilon(1e-15));
  CHECK(m.rmse == Approx(0.5));
  CHECK(m.max_abs == 1.0);
  CHECK(m.mean_abs == 0.25);
  CHECK(m.nonfinite == 0);
  CHECK(m.zero_fraction == 0.0);
  CHECK(*m.get("rel_l2") == Approx(0.2));
  REQUIRE_THROWS_AS(m.get("rel_l3"), InputError);
}

TEST_CASE("relative metrics are undefined, not divided, when ||b|| = 0") {
  const auto a = vec({0.5, 0, -1, 0}), b = vec({0, 0, 0, 0});
  const MetricSet m = compute_metrics(a, b);
  CHECK_FALSE(m.rel_l2.has_value());
  CHECK_FALSE(m.rel_l1.has_value());
  CHECK_FALSE(m.cosine.has_value());
  CHECK(m.max_abs == 1.0);
  CHECK(m.zero_fraction == 0.5);
  CHECK(m.zero_fraction_ref == 1.0);
  CHECK_FALSE(m.get("rel_l2").has_value());
  CHECK(m.to_json()["rel_l2"].is_null());
}

TEST_CASE("NaN and Inf in the candidate are counted and poison the figures") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const auto a = vec({1, nan, 3, std::numeric_limits<double>::infinity()}), b = vec({1, 2, 3, 4});
  const MetricSet m = compute_metrics(a, b);
  CHECK(m.nonfinite == 2);
  CHECK(m.nonfinite_ref == 0);
  REQUIRE(m.rel_l2.has_value());
  CHECK(std::isnan(*m.rel_l2));
  CHECK(std::isnan(m.max_abs));
  CHECK(std::isinf(m.ulp_max));
  CHECK(m.to_json()["rel_l2"] == "NaN");
  // Every figure of the candidate's own values reads NaN, cosine (its direction) and gain too:
  // undefined would be a report's "missing" for what is a NaN.
  REQUIRE(m.cosine.has_value());
  CHECK(std::isnan(*m.cosine));
  CHECK(m.to_json()["cosine"] == "NaN");
  REQUIRE(m.gain.has_value());
  CHECK(std::isnan(*m.gain));
  const MetricSet inf = compute_metrics(vec({1, std::numeric_limits<double>::infinity()}), vec({1, 2}));
  REQUIRE(inf.cosine.has_value());
  CHECK(std::isnan(*inf.cosine));
  // A candidate of no norm has no direction: undefined, as before.
  CHECK_FALSE(compute_metrics(vec({0, 0}), vec({1, 2})).cosine.has_value());
}

TEST_CASE("shape mismatch is an input error") {
  REQUIRE_THROWS_AS(compute_metrics(vec({1, 2}), vec({1, 2, 3})), InputError);
}

TEST_CASE("ulp distance counts at the storage type") {
  const float one_up = std::nextafter(1.0f, 2.0f);
  CHECK(ulp_distance(1.0, one_up, DType::f32) == 1.0);
  CHECK(ulp_distance(1.0, 1.0078125, DType::bf16) == 1.0);  // 1 + 2^-7
  CHECK(ulp_distance(1.0, 1.0 + 1.0 / 1024, DType::f16) == 1.0);
  CHECK(ulp_distance(1.0, 2.0, DType::f16) == 1024.0);
  CHECK(ulp_distance(-std::ldexp(1.0, -24), std::ldexp(1.0, -24), DType::f16) == 2.0);  // across zero
  CHECK(ulp_distance(0.0, -0.0, DType::f32) == 0.0);
  CHECK(ulp_distance(1.0, std::nextafter(1.0, 2.0), DType::f64) == 1.0);
  CHECK(ulp_distance(65504.0, 32768.0, DType::f16) == 1023.0);
  CHECK(std::isinf(ulp_distance(std::numeric_limits<double>::quiet_NaN(), 1.0, DType::f32)));
  // The tensor's own dtype decides: a bf16 candidate off by one bf16 step.
  auto a = vec({1.0, 2.0, 1.0078125}, DType::bf16), b = vec({1.0, 2.0, 1.0}, DType::bf16);
  CHECK(compute_metrics(a, b).ulp_max == 1.0);
  CHECK(compute_metrics(a, a).ulp_max == 0.0);
  CHECK(compute_metrics(a, b, DType::f32).ulp_max == 65536.0);
}

TEST_CASE("identical_fraction counts equal values at the storage type, NaN never equal") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  auto codes = vec({1, -3, 127, 0}, DType::i8), other = vec({1, -2, 127, 0}, DType::i8);
  CHECK(compute_metrics(codes, other).identical_fraction == 0.75);
  CHECK(compute_metrics(codes, codes).identical_fraction == 1.0);
  // One float32 ulp apart is not identical; -0 equals +0 (the same value).
  const float up = std::nextafter(0.5f, 1.0f);
  auto s1 = vec({0.5, 0.0, 2.0}, DType::f32), s2 = vec({static_cast<double>(up), -0.0, 2.0}, DType::f32);
  CHECK(compute_metrics(s1, s2).identical_fraction == Approx(2.0 / 3.0));
  auto n1 = vec({nan, 1.0}, DType::f32), n2 = vec({nan, 1.0}, DType::f32);
  CHECK(compute_metrics(n1, n2).identical_fraction == 0.5);
  CHECK_FALSE(compute_metrics(Tensor({0}, DType::f32), Tensor({0}, DType::f32)).get("identical_fraction"));
}

TEST_CASE("metrics are identical at any thread count") {
  Tensor a({300001}, DType::f64), b({300001}, DType::f64);
  uint64_t s = 12345;
  for (size_t i = 0; i < a.data.size(); ++i) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    const double u = static_cast<double>(s >> 11) / 9007199254740992.0;
    b.data[i] = u - 0.5;
    a.data[i] = b.data[i] + 1e-3 * (u - 0.25);
  }
  const int before = omp_get_max_threads();
  omp_set_num_threads(1);
  const MetricSet one = compute_metrics(a, b);
  omp_set_num_threads(4);
  const MetricSet four = compute_metrics(a, b);
  omp_set_num_threads(before);
  CHECK(std::memcmp(&*one.rel_l2, &*four.rel_l2, sizeof(double)) == 0);
  CHECK(std::memcmp(&*one.cosine, &*four.cosine, sizeof(double)) == 0);
  CHECK(std::memcmp(&one.rmse, &four.rmse, sizeof(double)) == 0);
  CHECK(*one.rel_l2 > 0.0);
}

TEST_CASE("breakdown per head, query block and latent frame") {
  const BlockConfig cfg = preset_config("tiny");  // S = 72 (64 video in 2 frames + 8 cond), H = 2, D = 32
  const int64_t S = cfg.tokens(), H = cfg.heads, D = cfg.head_dim;
  Tensor b({S, H, D}, DType::f32), a({S, H, D}, DType::f32);
  for (size_t i = 0; i < b.data.size(); ++i) b.data[i] = 1.0 + static_cast<double>(i % 7);
  a.data = b.data;
  // Error only in head 1 of frame 1's tokens (video tokens 32..63).
  for (int64_t s = 32; s < 64; ++s)
    for (int64_t d = 0; d < D; ++d) a.data[static_cast<size_t>((s * H + 1) * D + d)] += 0.5;
  const MetricBreakdown br = compute_breakdown(a, b, cfg);
  REQUIRE(br.per_head.size() == 2);
  REQUIRE(br.per_frame.size() == 2);
  REQUIRE(br.per_query_block.size() == 1);  // 72 tokens: one short block
  REQUIRE(br.cond.has_value());
  CHECK(*br.per_head[0].rel_l2 == 0.0);
  CHECK(*br.per_head[1].rel_l2 > 0.0);
  CHECK(*br.per_frame[0].rel_l2 == 0.0);
  CHECK(*br.per_frame[1].rel_l2 > 0.0);
  CHECK(*br.cond->rel_l2 == 0.0);
  CHECK(br.cond->count == 8 * H * D);
  CHECK(br.per_frame[1].max_abs == 0.5);
  CHECK(*br.per_query_block[0].rel_l2 == Approx(*br.overall.rel_l2).epsilon(1e-12));
  const auto w = br.worst(1);
  CHECK(w["per_head"][0]["index"] == 1);
  CHECK(w["per_frame"][0]["index"] == 1);
  REQUIRE_THROWS_AS(compute_breakdown(vec({1}), vec({1}), cfg), InputError);
}

TEST_CASE("gain is the least-squares scale of the candidate onto the reference") {
  const MetricSet m = compute_metrics(vec({2.06, 4.12, -6.18}), vec({2, 4, -6}));
  REQUIRE(m.gain.has_value());
  CHECK(*m.gain == Approx(1.03).epsilon(1e-12));
  CHECK(*m.get("gain") == Approx(1.03).epsilon(1e-12));
  // Noise orthogonal to b leaves the gain at 1 whatever its size.
  CHECK(*compute_metrics(vec({1, 1}), vec({1, 0})).gain == 1.0);
  CHECK_FALSE(compute_metrics(vec({1, 1}), vec({0, 0})).gain.has_value());
  CHECK(std::isnan(*compute_metrics(vec({NAN, 1}), vec({1, 1})).gain));
}

TEST_CASE("breakdown figures: the worst head, query block and frame, and the worst head gain") {
  const BlockConfig cfg = preset_config("tiny");  // S = 72 (64 video in 2 frames + 8 cond), H = 2, D = 32
  const int64_t S = cfg.tokens(), H = cfg.heads, D = cfg.head_dim;
  Tensor b({S, H, D}, DType::f64);
  for (size_t i = 0; i < b.data.size(); ++i) b.data[i] = 1.0 + static_cast<double>(i % 7);
  auto idx = [&](int64_t s, int64_t h, int64_t d) { return static_cast<size_t>((s * H + h) * D + d); };

  // Head 1 scaled by 1.03: its rel_l2 and gain error are 0.03, the whole
  // tensor's rel_l2 is smaller (head 0 is exact).
  Tensor a = b;
  for (int64_t s = 0; s < S; ++s)
    for (int64_t d = 0; d < D; ++d) a.data[idx(s, 1, d)] *= 1.03;
  const MetricBreakdown br = compute_breakdown(a, b, cfg);
  auto f = metric_map(br);
  for (const auto& n : breakdown_metric_names()) REQUIRE(f.count(n) == 1);
  CHECK(*f["rel_l2_worst_head"] == Approx(0.03).epsilon(1e-9));
  CHECK(*f["gain_error_worst_head"] == Approx(0.03).epsilon(1e-9));
  CHECK(*f["rel_l2"] < 0.025);
  CHECK(*f["rel_l2_worst_qblock"] == Approx(*f["rel_l2"]).epsilon(1e-12));  // one block
  double worst_frame = *br.cond->rel_l2;
  for (const auto& fr : br.per_frame) worst_frame = std::max(worst_frame, *fr.rel_l2);
  CHECK(*f["rel_l2_worst_frame"] == worst_frame);
  CHECK(worst_frame < 0.03);  // every frame holds head 0 too

  // The conditioning tokens count as a frame: an error only there is the worst frame.
  a = b;
  for (int64_t s = 64; s < S; ++s)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t d = 0; d < D; ++d) a.data[idx(s, h, d)] = 0;
  f = metric_map(compute_breakdown(a, b, cfg));
  CHECK(*f["rel_l2_worst_frame"] == 1.0);

  // A NaN anywhere makes every worst figure NaN (NaN never passes); a group
  // whose reference is zero is left out, and all of them zero is undefined.
  a = b;
  a.data[idx(3, 0, 5)] = NAN;
  f = metric_map(compute_breakdown(a, b, cfg));
  for (const auto& n : breakdown_metric_names()) CHECK(std::isnan(*f[n]));
  Tensor zb = b;
  for (int64_t s = 0; s < S; ++s)
    for (int64_t d = 0; d < D; ++d) zb.data[idx(s, 0, d)] = 0;
  f = metric_map(compute_breakdown(b, zb, cfg));
  CHECK(*f["rel_l2_worst_head"] == 0.0);  // head 1 equal, head 0 undefined and left out
  for (double& x : zb.data) x = 0;
  f = metric_map(compute_breakdown(b, zb, cfg));
  for (const auto& n : breakdown_metric_names()) CHECK_FALSE(f[n].has_value());

  // Gate files and measurements may name them.
  for (const auto& n : breakdown_metric_names())
    CHECK(std::find(gate_metric_names().begin(), gate_metric_names().end(), n) != gate_metric_names().end());
}

TEST_CASE("ulp between storage types: both rounded to the narrower, and said so") {
  // A float64 output and its bf16 rounding: at float64 their bits are some
  // 2^44 ulps apart, a figure of nothing; rounded to bf16 they are equal.
  const double x = 1.0 + 1.0 / 3.0;
  const double xb = 1.3359375;  // x rounded to bf16 (nearest, 8 significant bits)
  auto f64 = vec({x, 2.0, -0.5}), bf = vec({xb, 2.0, -0.5}, DType::bf16);
  const MetricSet m = compute_metrics(f64, bf);
  CHECK(m.ulp_max == 0.0);
  CHECK(m.identical_fraction == 1.0);
  CHECK(m.ulp_at == DType::bf16);
  CHECK(m.storage == DType::f64);
  CHECK(m.storage_ref == DType::bf16);
  CHECK(m.ulp_note() == "ulp_max and identical_fraction counted at bfloat16 after rounding both sides (the "
                        "candidate float64, the reference bfloat16) to it");
  CHECK(m.to_json()["ulp_note"] == m.ulp_note());
  CHECK(m.to_json()["ulp_storage"] == "bfloat16");
  // One bf16 step off after rounding is one ulp, not 2^45.
  auto off = vec({x + 1.0 / 128, 2.0, -0.5});
  CHECK(compute_metrics(off, bf).ulp_max == 1.0);
  // Either order, and the breakdown: the same type.
  CHECK(compute_metrics(bf, f64).ulp_at == DType::bf16);
  CHECK(ulp_storage(DType::f32, DType::f16) == DType::f16);
  CHECK(ulp_storage(DType::f64, DType::f32) == DType::f32);
  // One type on both sides: no note, counted at that type.
  CHECK(compute_metrics(f64, f64).ulp_note().empty());
  CHECK_FALSE(compute_metrics(f64, f64).to_json().contains("ulp_note"));
  // bf16 rounding is to nearest even, not truncation.
  CHECK(ulp_distance(1.0 + 3.0 / 512, 1.0078125, DType::bf16) == 0.0);  // rounds up to 1 + 2^-7
  CHECK(ulp_distance(1.0 + 1.0 / 256, 1.0, DType::bf16) == 0.0);        // a tie: to even (1.0)
  // The storage types reach judge() as hidden figures (not gate metrics).
  const auto figs = metric_map(m);
  CHECK(figs.at(kStorageFigure) == static_cast<double>(static_cast<int>(DType::f64)));
  CHECK(figs.at(kStorageRefFigure) == static_cast<double>(static_cast<int>(DType::bf16)));
  CHECK_THROWS_AS(m.get(kStorageFigure), InputError);
}
