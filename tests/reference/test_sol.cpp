// sol routed attention: dense limit, the forward's definition at every tau,
// exactness of conditioning tokens, routing rules, segment-respecting blocks,
// the softmax's vector lanes.
#include <omp.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "catch.hpp"
#include "core/error.hpp"
#include "reference/attention_sol.hpp"
#include "reference/sol_arith.hpp"
#include "reference/sol_lanes.hpp"
#include "test_sage2_inputs.hpp"

using namespace ts;
using ts::testing::make_inputs;
using ts::testing::rel_l2;

namespace {

AttentionResult run_sol(const ts::testing::Inputs& in, const std::string& spec) {
  BackendParams p = BackendParams::parse(spec);
  return make_sol_backend(p)->run(in.problem());
}

// Video 100, text 20, video 70, audio 10 (S = 200).
std::vector<Segment> mixed_segments() {
  return {{"video", true, 0, 100}, {"text", false, 100, 20}, {"video", true, 120, 70},
          {"audio", false, 190, 10}};
}

// The forward as numerics.md defines it, in float64, from sol's routing mask:
// routed video blocks and every conditioning token exactly, unrouted blocks as
// one pseudo-key (q·k̄·scale + ln n, value v̄) when compensating.
Tensor naive_sol(const ts::testing::Inputs& in, const Tensor& mask, const Tensor& blocks,
                 int64_t block_q, bool compensation) {
  const int64_t S = in.q.dim(0), H = in.q.dim(1), D = in.q.dim(2);
  const int64_t QB = mask.dim(1), VB = mask.dim(2);
  std::vector<int64_t> block_of(static_cast<size_t>(S), -1);
  for (int64_t j = 0; j < VB; ++j)
    for (int64_t s = 0; s < static_cast<int64_t>(blocks.data[j * 2 + 1]); ++s)
      block_of[static_cast<int64_t>(blocks.data[j * 2]) + s] = j;
  auto at = [&](const Tensor& t, int64_t s, int64_t h, int64_t d) { return t.data[(s * H + h) * D + d]; };
  Tensor out({S, H, D}, DType::f64);
  for (int64_t h = 0; h < H; ++h)
    for (int64_t i = 0; i < S; ++i) {
      const int64_t qb = i / block_q;
      REQUIRE(qb < QB);
      std::vector<double> logit, w;
      std::vector<std::vector<double>> val;
      for (int64_t s = 0; s < S; ++s) {
        const int64_t j = block_of[s];
        if (j >= 0 && mask.data[(h * QB + qb) * VB + j] == 0) continue;
        double dot = 0;
        std::vector<double> v(static_cast<size_t>(D));
        for (int64_t d = 0; d < D; ++d) {
          dot += at(in.q, i, h, d) * at(in.k, s, h, d);
          v[d] = at(in.v, s, h, d);
        }
        logit.push_back(dot * in.softmax_scale);
        val.push_back(v);
      }
      for (int64_t j = 0; j < VB && compensation; ++j) {
        if (mask.data[(h * QB + qb) * VB + j] != 0) continue;
        const int64_t s0 = static_cast<int64_t>(blocks.data[j * 2]);
        const int64_t n = static_cast<int64_t>(blocks.data[j * 2 + 1]);
        std::vector<double> kbar(static_cast<size_t>(D), 0.0), vbar(static_cast<size_t>(D), 0.0);
        for (int64_t s = s0; s < s0 + n; ++s)
          for (int64_t d = 0; d < D; ++d) {
            kbar[d] += at(in.k, s, h, d) / n;
            vbar[d] += at(in.v, s, h, d) / n;
          }
        double dot = 0;
        for (int64_t d = 0; d < D; ++d) dot += at(in.q, i, h, d) * kbar[d];
        logit.push_back(dot * in.softmax_scale + std::log(static_cast<double>(n)));
        val.push_back(vbar);
      }
      double m = -1e300, l = 0;
      for (double x : logit) m = std::max(m, x);
      for (double x : logit) l += std::exp(x - m);
      for (int64_t d = 0; d < D; ++d) {
        double acc = 0;
        for (size_t t = 0; t < logit.size(); ++t) acc += std::exp(logit[t] - m) * val[t][d];
        out.data[(i * H + h) * D + d] = acc / l;
      }
    }
  return out;
}

double density(const AttentionResult& r) { return r.stats.at("density").get<double>(); }

}  // namespace

TEST_CASE("sol at tau=-100 is dense float32 attention of the bf16 inputs") {
  const auto in = make_inputs(200, 2, 64, 11, mixed_segments());
  const Tensor exact = ts::testing::naive_attention(in);
  const auto r = run_sol(in, "sol:tau=-100,round_out=off");
  CHECK(density(r) == 1.0);
  const double e = rel_l2(r.out, exact);
  INFO("rel_l2 " << e);
  CHECK(e < 1e-6);
  // Stored output is bf16.
  const auto b = run_sol(in, "sol:tau=-100");
  CHECK(b.out.dtype == DType::bf16);
  CHECK(rel_l2(b.out, exact) < 4e-3);
}

TEST_CASE("sol forward matches its definition at every tau, with and without compensation") {
  const auto in = make_inputs(
      256, 2, 32, 12,
      {{"video", true, 0, 150}, {"text", false, 150, 30}, {"video", true, 180, 76}});
  for (double tau : {0.0, 0.7, 1.3, 3.0})
    for (bool comp : {true, false}) {
      const std::string spec = "sol:round_out=off,dump=on,block_q=64,block_k=32,tau=" +
                               std::to_string(tau) + ",compensation=" + (comp ? "on" : "off");
      const auto r = run_sol(in, spec);
      const Tensor ref = naive_sol(in, r.intermediates.at("route_mask"),
                                   r.intermediates.at("video_blocks"), 64, comp);
      const double e = rel_l2(r.out, ref);
      INFO(spec << " rel_l2 " << e << " density " << density(r));
      CHECK(e < 2e-6);
      if (tau >= 0.7) CHECK(density(r) < 1.0);
    }
}

TEST_CASE("sol: unrouted blocks enter only through their means; conditioning tokens always exactly") {
  const std::vector<Segment> segs = {{"video", true, 0, 192}, {"text", false, 192, 64}};
  const auto in = make_inputs(256, 1, 32, 13, segs);
  const std::string spec = "sol:tau=1.0,dump=on,block_q=64,block_k=32";
  const auto base = run_sol(in, spec);
  const Tensor& mask = base.intermediates.at("route_mask");
  const int64_t QB = mask.dim(1), VB = mask.dim(2);
  REQUIRE(VB == 6);
  // A video block that some query block does not route.
  int64_t j = -1;
  for (int64_t b = 0; b < VB && j < 0; ++b)
    for (int64_t i = 0; i < QB; ++i)
      if (mask.data[i * VB + b] == 0) j = b;
  REQUIRE(j >= 0);
  // Swap two tokens' keys and values inside block j: its k̄, v̄ stay bit-equal
  // (float32 sums of these inputs are exact), its individual keys change.
  auto moved = in;
  const int64_t a = j * 32 + 3, b = j * 32 + 17, D = 32;
  for (int64_t d = 0; d < D; ++d) {
    std::swap(moved.k.data[a * D + d], moved.k.data[b * D + d]);
    std::swap(moved.v.data[a * D + d], moved.v.data[b * D + d]);
  }
  const auto after = run_sol(moved, spec);
  CHECK(after.intermediates.at("route_mask").data == mask.data);
  int64_t unrouted_rows = 0;
  for (int64_t i = 0; i < QB; ++i) {
    if (mask.data[i * VB + j] != 0) continue;
    for (int64_t s = i * 64; s < (i + 1) * 64; ++s)
      for (int64_t d = 0; d < D; ++d) REQUIRE(after.out.data[s * D + d] == base.out.data[s * D + d]);
    ++unrouted_rows;
  }
  CHECK(unrouted_rows > 0);
  // Changing one conditioning key changes every query block's output.
  auto cond = in;
  for (int64_t d = 0; d < D; ++d) cond.k.data[200 * D + d] = -cond.k.data[200 * D + d] + 1.0;
  const auto c = run_sol(cond, spec);
  for (int64_t i = 0; i < QB; ++i) {
    double diff = 0;
    for (int64_t s = i * 64; s < (i + 1) * 64; ++s)
      for (int64_t d = 0; d < D; ++d) diff += std::fabs(c.out.data[s * D + d] - base.out.data[s * D + d]);
    CHECK(diff > 0);
  }
}

TEST_CASE("sol density falls as tau rises; the largest block is always routed") {
  const auto in = make_inputs(512, 2, 32, 14);
  double prev = 2.0;
  for (double tau : {-100.0, -1.0, 0.0, 0.5, 1.0, 1.3, 2.0, 3.0}) {
    const double d = density(run_sol(in, "sol:tau=" + std::to_string(tau)));
    INFO("tau " << tau << " density " << d);
    CHECK(d <= prev);
    if (tau == -100.0) CHECK(d == 1.0);
    prev = d;
  }
  CHECK(prev < 0.5);
  // Above any z-score only the argmax of r_ij survives, per head and query block.
  const auto r = run_sol(in, "sol:tau=50,dump=on");
  const Tensor& mask = r.intermediates.at("route_mask");
  const Tensor& rr = r.intermediates.at("routing_r");
  const int64_t H = mask.dim(0), QB = mask.dim(1), VB = mask.dim(2);
  REQUIRE(VB == 8);
  CHECK(density(r) == Approx(1.0 / VB));
  for (int64_t h = 0; h < H; ++h)
    for (int64_t i = 0; i < QB; ++i) {
      const double* row = rr.data.data() + (h * QB + i) * VB;
      int64_t best = 0;
      for (int64_t j = 1; j < VB; ++j)
        if (row[j] > row[best]) best = j;
      for (int64_t j = 0; j < VB; ++j) CHECK(mask.data[(h * QB + i) * VB + j] == (j == best ? 1 : 0));
      // r_ij recomputed from float32 means of this head's tokens.
      std::vector<float> qbar(32, 0.0f), kbar(32, 0.0f);
      for (int64_t s = i * 128; s < (i + 1) * 128; ++s)
        for (int64_t d = 0; d < 32; ++d) qbar[d] += static_cast<float>(in.q.data[(s * H + h) * 32 + d]);
      for (int64_t s = best * 64; s < (best + 1) * 64; ++s)
        for (int64_t d = 0; d < 32; ++d) kbar[d] += static_cast<float>(in.k.data[(s * H + h) * 32 + d]);
      double dot = 0;
      for (int64_t d = 0; d < 32; ++d) dot += static_cast<double>(qbar[d] / 128.0f) * (kbar[d] / 64.0f);
      CHECK(row[best] == Approx(dot * in.softmax_scale).epsilon(1e-12));
    }
}

TEST_CASE("sol routing rules on hand cases") {
  SolConfig c;
  c.tau = 100;
  CHECK(sol_route({1.0, 3.0, 2.0}, c) == std::vector<uint8_t>{0, 1, 0});
  CHECK(sol_route({3.0, 1.0, 3.0}, c) == std::vector<uint8_t>{1, 0, 0});  // ties: the first
  c.tau = 3.0;
  CHECK(sol_route({0.5, 0.5, 0.5, 0.5}, c) == std::vector<uint8_t>{1, 1, 1, 1});  // std 0
  c.tau = 0.0;
  // mean 2.5, population std sqrt(1.25): z = -1.34, -0.45, 0.45, 1.34.
  CHECK(sol_route({1.0, 2.0, 3.0, 4.0}, c) == std::vector<uint8_t>{0, 0, 1, 1});
  c.tau = -0.45;
  CHECK(sol_route({1.0, 2.0, 3.0, 4.0}, c) == std::vector<uint8_t>{0, 1, 1, 1});
  c.selector = SolSelector::topk;
  c.topk = 0.5;
  CHECK(sol_route({4.0, 1.0, 3.0, 2.0, 0.0}, c) == std::vector<uint8_t>{1, 0, 1, 1, 0});  // ceil(2.5)
  c.selector = SolSelector::cdf;
  c.cdf = 0.5;
  // softmax of {10, 0, 0}: the first block alone holds > 99.9 % of the mass.
  CHECK(sol_route({10.0, 0.0, 0.0}, c) == std::vector<uint8_t>{1, 0, 0});
  c.cdf = 1.0;
  CHECK(sol_route({1.0, 1.0, 1.0}, c) == std::vector<uint8_t>{1, 1, 1});
}

TEST_CASE("sol: identical video key means route everything; blocks respect segments") {
  auto in = make_inputs(200, 1, 16, 15, mixed_segments());
  // Every video key equal: all k̄_j equal, std of r is 0.
  for (const Segment& s : in.segments)
    if (s.video)
      for (int64_t t = s.start; t < s.end(); ++t)
        for (int64_t d = 0; d < 16; ++d) in.k.data[t * 16 + d] = in.k.data[d];
  const auto r = run_sol(in, "sol:tau=3,dump=on");
  CHECK(density(r) == 1.0);
  const Tensor& vb = r.intermediates.at("video_blocks");
  CHECK(vb.shape == std::vector<int64_t>{4, 2});
  CHECK(vb.data == std::vector<double>{0, 64, 64, 36, 120, 64, 184, 6});
  const auto blocks = sol_key_blocks(mixed_segments(), 64);
  REQUIRE(blocks.size() == 6);
  CHECK(!blocks[2].video);
  CHECK(blocks[2].start == 100);
  CHECK(blocks[2].length == 20);
  CHECK(blocks[5].start == 190);
  CHECK(blocks[5].video_index == -1);
  CHECK(blocks[4].video_index == 3);
}

TEST_CASE("sol int8 variants stay close to their bf16 counterpart and to exact") {
  const auto in = make_inputs(384, 2, 64, 16, {{"video", true, 0, 320}, {"text", false, 320, 64}});
  const Tensor exact = ts::testing::naive_attention(in);
  for (const char* prec : {"int8_qk", "int8_qk_pv"}) {
    const auto dense = run_sol(in, std::string("sol:tau=-100,precision=") + prec);
    const double e = rel_l2(dense.out, exact);
    INFO(prec << " dense rel_l2 " << e);
    CHECK(ts::testing::all_finite(dense.out));
    CHECK(e > 1e-4);  // quantised: measurably not exact
    CHECK(e < 3e-2);
    const auto bf = run_sol(in, "sol:tau=1.3");
    const auto q = run_sol(in, std::string("sol:tau=1.3,precision=") + prec);
    CHECK(density(q) == density(bf));  // routing uses the unquantised means
    CHECK(rel_l2(q.out, bf.out) < 3e-2);
  }
}

TEST_CASE("sol gives the same bits at 1 and 2 threads; factory names") {
  const auto in = make_inputs(300, 3, 32, 17, {{"video", true, 0, 260}, {"audio", false, 260, 40}});
  for (const char* prec : {"bf16", "int8_qk", "int8_qk_pv"}) {
    const int saved = omp_get_max_threads();
    omp_set_num_threads(1);
    const auto one = run_sol(in, std::string("sol:precision=") + prec);
    omp_set_num_threads(2);
    const auto two = run_sol(in, std::string("sol:precision=") + prec);
    omp_set_num_threads(saved);
    CHECK(one.out.data == two.out.data);
  }
  auto make = [](const std::string& spec) {
    BackendParams p = BackendParams::parse(spec);
    return make_sol_backend(p);
  };
  CHECK(make("sol")->name() == "sol_tau1.3_bf16");
  CHECK(make("sol:tau=0.5,precision=int8_qk")->name() == "sol_tau0.5_int8_qk");
  CHECK(make("sol:selector=topk,topk=0.25")->name() == "sol_topk0.25_bf16");
  CHECK(make("sol:compensation=off")->name() == "sol_tau1.3_bf16_nocomp");
  CHECK(make("sol")->params().at("block_k") == 64);
  REQUIRE_THROWS_AS(make("sol:tua=1"), InputError);
  REQUIRE_THROWS_AS(make("sol:precision=fp8"), InputError);
  REQUIRE_THROWS_AS(make("sol:topk=0"), InputError);
  REQUIRE_THROWS_AS(make("sol:block_k=0"), InputError);
}

TEST_CASE("sol routing=on stores its mask with the geometry a real kernel needs") {
  const auto in = make_inputs(200, 2, 16, 15, mixed_segments());
  const auto with = run_sol(in, "sol:tau=0.5,routing=on,dump=on,compensation=off");
  const auto without = run_sol(in, "sol:tau=0.5,compensation=off");
  CHECK(without.datasets.empty());
  REQUIRE(with.datasets.count("routing") == 1);
  const ResultDataset& d = with.datasets.at("routing");
  CHECK(d.tensor.dtype == DType::u8);
  CHECK(d.tensor.shape == std::vector<int64_t>{2, 2, 4});  // H, ceil(200/128), video blocks
  CHECK(d.tensor.data == with.intermediates.at("route_mask").data);
  CHECK(d.attrs["format"] == "touchstone.sol_routing/1");
  CHECK(d.attrs["block_q"] == 128);
  CHECK(d.attrs["block_k"] == 64);
  CHECK(d.attrs["tokens"] == 200);
  CHECK(d.attrs["video_block_start"] == nlohmann::json::array({0, 64, 120, 184}));
  CHECK(d.attrs["video_block_length"] == nlohmann::json::array({64, 36, 64, 6}));
  const auto segs = nlohmann::json::parse(d.attrs["segments"].get<std::string>());
  REQUIRE(segs.size() == 4);
  CHECK(segs[1] == nlohmann::json({{"name", "text"}, {"kind", "cond"}, {"start", 100}, {"length", 20}}));
  CHECK(d.attrs["compensation"] == false);
  // the routing does not change the arithmetic or the output's name
  CHECK(with.out.data == without.out.data);
}

TEST_CASE("sol softmax lanes give sol::expf_det's bits and sum on every path") {
  std::mt19937 rng(5);
  std::normal_distribution<float> g(0.0f, 1.0f);
  for (const Isa isa : isas_available())
    for (const int64_t n : {0, 1, 7, 64, 1000})
      for (const float spread : {1.0f, 30.0f, 1e4f}) {
        std::vector<float> x(static_cast<size_t>(n));
        for (auto& v : x) v = g(rng) * spread;
        if (n > 3) {  // exp's slow lanes: underflow, -Inf, NaN
          x[0] = -800.0f;
          x[1] = -std::numeric_limits<float>::infinity();
          x[2] = std::numeric_limits<float>::quiet_NaN();
        }
        std::vector<float> want = x, got = x;
        const float m = spread, start = 0.25f;
        float sum_want = start;
        for (auto& v : want) sum_want += (v = sol::expf_det(v - m));
        const float sum_got = sol_lanes::exp_and_sum(got.data(), n, m, start, isa);
        INFO(isa_name(isa) << " n " << n << " spread " << spread);
        CHECK(std::memcmp(&sum_got, &sum_want, sizeof sum_got) == 0);
        CHECK((n == 0 || std::memcmp(got.data(), want.data(), got.size() * sizeof(float)) == 0));
      }
}
