// The metric passes (gates/metric_pass.cpp) against the plain definitions:
// rounding to a 16-bit format by frexp/ldexp, and every sum added one element
// at a time in index order.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "catch.hpp"
#include "core/block_config.hpp"
#include "gates/metric_sums.hpp"
#include "gates/metrics.hpp"
#include "reference/numerics/convert.hpp"

namespace {

// The rounding the metrics define (round to nearest even in a format of
// `mant` stored significand bits and `ebits` exponent bits), by libm.
uint32_t rounded_by_libm(double x, int mant, int ebits) {
  const int bias = (1 << (ebits - 1)) - 1;
  const uint32_t inf = ((1u << ebits) - 1) << mant;
  const double ax = std::fabs(x);
  if (ax == 0.0) return 0;
  if (std::isinf(ax)) return inf;
  int e = 0;
  std::frexp(ax, &e);
  int E = e - 1;
  if (E < 1 - bias) return static_cast<uint32_t>(std::nearbyint(std::ldexp(ax, mant + bias - 1)));
  const double one = std::ldexp(1.0, mant);
  double m = std::nearbyint(std::ldexp(ax, mant - E)) - one;
  if (m >= one) {
    m = 0;
    ++E;
  }
  if (E > bias) return inf;
  return (static_cast<uint32_t>(E + bias) << mant) | static_cast<uint32_t>(m);
}

double from_bits(uint64_t u) {
  double d;
  std::memcpy(&d, &u, sizeof d);
  return d;
}

}  // namespace

TEST_CASE("the integer rounding to bfloat16 and float16 is libm's, at every exponent") {
  using ts::metric_detail::rounded_magnitude;
  std::mt19937_64 rng(7);
  std::vector<double> xs = {0.0, -0.0, 1.0, 65504.0, 65520.0, 65519.99, 0x1p-14, 0x1p-24, 0x1p-25, 0x1.8p-25,
                            0x1p-126, 0x1p-133, 0x1p-134, 0x1.8p-134, 3.3895313892515355e38, 3.4e38, 1e300,
                            from_bits(1), from_bits(0x000fffffffffffffull), -2.5e-5, 1.00390625, 1.01171875};
  for (int i = 0; i < 400000; ++i) {
    // Every exponent a double has, and ties: significands with few bits set.
    const uint64_t sign = (rng() & 1) << 63, ex = rng() % 2047;
    uint64_t frac = rng() & ((uint64_t(1) << 52) - 1);
    if (i % 3 == 0) frac &= ~((uint64_t(1) << (40 + rng() % 12)) - 1);
    xs.push_back(from_bits(sign | (ex << 52) | frac));
  }
  for (double x : xs) {
    INFO(x);
    REQUIRE(rounded_magnitude<7, 8>(x) == rounded_by_libm(x, 7, 8));
    REQUIRE(rounded_magnitude<10, 5>(x) == rounded_by_libm(x, 10, 5));
  }
}

TEST_CASE("the vector passes give the sums of one element at a time, on every instruction set") {
  using namespace ts;
  // A geometry whose query blocks hold whole stretches (fused) and one whose do not.
  for (const auto [H, D] : {std::pair<int64_t, int64_t>{2, 64}, {3, 40}}) {
    BlockConfig c;
    c.heads = H;
    c.head_dim = D;
    c.grid_t = 3;
    c.grid_h = 4;
    c.grid_w = 50;
    c.segments = {{"video", true, 0, 600}, {"text", false, 600, 77}};
    const int64_t S = c.tokens();
    Tensor a({S, H, D}, DType::bf16), b({S, H, D}, DType::f32);
    std::mt19937_64 rng(3);
    std::normal_distribution<double> n(0, 1);
    for (size_t i = 0; i < a.data.size(); ++i) {
      b.data[i] = static_cast<float>(n(rng));
      a.data[i] = std::ldexp(std::nearbyint(std::ldexp(b.data[i], 7)), -7);  // a few ulps off
    }
    a.data[5] = NAN;
    a.data[77] = INFINITY;
    b.data[78] = 0.0;
    std::vector<MetricBreakdown> runs;
    for (int isa : {2, 1, 0}) {
      metric_detail::lane_isa_cap() = isa;
      runs.push_back(compute_breakdown(a, b, c));
    }
    metric_detail::lane_isa_cap() = 2;
    // The definition: every group's sums element by element in index order.
    const DType storage = ulp_storage(a.dtype, b.dtype);
    std::vector<metric_detail::Sums> heads(static_cast<size_t>(H));
    metric_detail::Sums all, chunk;
    std::vector<metric_detail::Sums> chunks;
    for (int64_t i = 0; i < a.numel(); ++i) {
      chunk.add(a.data[i], b.data[i], storage);
      if ((i + 1) % metric_detail::kChunk == 0 || i + 1 == a.numel()) {
        all.merge(chunk);
        chunk = {};
      }
    }
    MetricSet want = all.finish();
    for (const auto& got : runs) {
      INFO("H " << H << " D " << D);
      CHECK(got.overall.to_json() == [&] { want.set_storage(a.dtype, b.dtype); return want.to_json(); }());
      CHECK(got.to_json() == runs.front().to_json());
      CHECK(compute_metrics(a, b).to_json() == got.overall.to_json());
    }
    // Per head and query block, against block-by-block sums.
    for (int64_t blk = 0; blk * 128 < S; ++blk) {
      metric_detail::Sums block;
      for (int64_t h = 0; h < H; ++h) {
        metric_detail::Sums s;
        for (int64_t t = blk * 128; t < std::min(S, (blk + 1) * 128); ++t)
          for (int64_t d = 0; d < D; ++d) s.add(a.data[(t * H + h) * D + d], b.data[(t * H + h) * D + d], storage);
        block.merge(s);
      }
      MetricSet m = block.finish();
      m.set_storage(a.dtype, b.dtype);
      CHECK(runs.front().per_query_block[static_cast<size_t>(blk)].to_json() == m.to_json());
    }
  }
}

namespace {

// The stored bytes of t (little-endian; bfloat16 and float16 as their bits),
// cut into spans of `piece` elements held in separate buffers, as a file's
// chunks are.
ts::StoredTensor stored_copy(const ts::Tensor& t, int64_t piece, std::vector<std::vector<unsigned char>>& keep) {
  using namespace ts;
  StoredTensor s;
  s.shape = t.shape;
  s.dtype = t.dtype;
  const size_t esize = t.dtype == DType::bf16 || t.dtype == DType::f16 ? 2 : static_cast<size_t>(dtype_bytes(t.dtype));
  for (int64_t at = 0; at < t.numel(); at += piece) {
    const int64_t n = std::min(piece, t.numel() - at);
    keep.emplace_back(static_cast<size_t>(n) * esize);
    unsigned char* p = keep.back().data();
    for (int64_t i = 0; i < n; ++i) {
      const double x = t.data[static_cast<size_t>(at + i)];
      if (t.dtype == DType::f64) {
        std::memcpy(p + 8 * i, &x, 8);
      } else if (t.dtype == DType::f32) {
        const float f = static_cast<float>(x);
        std::memcpy(p + 4 * i, &f, 4);
      } else if (t.dtype == DType::bf16) {
        const float f = static_cast<float>(x);
        uint32_t u;
        std::memcpy(&u, &f, 4);
        const uint16_t h = static_cast<uint16_t>(u >> 16);
        std::memcpy(p + 2 * i, &h, 2);
      } else {  // f16, from values that are exact in it
        const uint16_t h = ts::num::fp16_bits(static_cast<float>(x));
        std::memcpy(p + 2 * i, &h, 2);
      }
    }
    s.spans.push_back({at, n, p});
  }
  return s;
}

// x rounded to what a tensor of type t holds.
double held_as(ts::DType t, double x) {
  using ts::DType;
  if (t == DType::f64 || !std::isfinite(x)) return x;
  if (t == DType::f32) return static_cast<float>(x);
  if (t == DType::f16) return ts::num::fp16_round(static_cast<float>(x));
  const float f = static_cast<float>(x);
  uint32_t u;
  std::memcpy(&u, &f, 4);
  u = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
  float r;
  std::memcpy(&r, &u, 4);
  return r;
}

}  // namespace

TEST_CASE("metrics of stored operands have the bits of the same values as doubles") {
  using namespace ts;
  BlockConfig c;
  c.heads = 2;
  c.head_dim = 64;
  c.grid_t = 3;
  c.grid_h = 4;
  c.grid_w = 50;
  c.segments = {{"video", true, 0, 600}, {"text", false, 600, 77}};
  const int64_t S = c.tokens(), H = 2, D = 64;
  std::mt19937_64 rng(5);
  std::normal_distribution<double> n(0, 1);
  for (const DType ta : {DType::bf16, DType::f16, DType::f32, DType::f64}) {
    for (const DType tb : {DType::bf16, DType::f64}) {
      Tensor a({S, H, D}, ta), b({S, H, D}, tb);
      for (size_t i = 0; i < a.data.size(); ++i) {
        const double x = n(rng);
        // Values each type holds exactly, as a tensor of it does.
        b.data[i] = held_as(tb, std::ldexp(std::nearbyint(std::ldexp(x, 7)), -7));
        a.data[i] = held_as(ta, b.data[i] * (i % 7 == 0 ? 1.01 : 1.0));
      }
      a.data[9] = NAN;
      b.data[1000] = INFINITY;
      a.data[1000] = INFINITY;
      std::vector<std::vector<unsigned char>> keep;
      // Spans that cut rows, heads and query blocks anywhere.
      const StoredTensor sa = stored_copy(a, 1000, keep), sb = stored_copy(b, 4099, keep);
      INFO(dtype_name(ta) << " vs " << dtype_name(tb));
      for (int isa : {2, 1, 0}) {
        metric_detail::lane_isa_cap() = isa;
        const auto dense = compute_breakdown(a, b, c).to_json().dump();
        CHECK(compute_breakdown(sa, sb, c).to_json().dump() == dense);
        CHECK(compute_breakdown(sa, b, c).to_json().dump() == dense);
        CHECK(compute_metrics(sa, sb).to_json().dump() == compute_metrics(a, b).to_json().dump());
      }
      metric_detail::lane_isa_cap() = 2;
    }
  }
  // A shape whose query blocks do not hold whole stretches (the unfused pass) and a short last block.
  BlockConfig odd = c;
  odd.heads = 3;
  odd.head_dim = 40;
  Tensor a({S, 3, 40}, DType::bf16), b({S, 3, 40}, DType::f32);
  for (size_t i = 0; i < a.data.size(); ++i) {
    b.data[i] = std::ldexp(std::nearbyint(std::ldexp(n(rng), 7)), -7);
    a.data[i] = held_as(DType::bf16, -b.data[i] / 3);
  }
  std::vector<std::vector<unsigned char>> keep;
  const StoredTensor sa = stored_copy(a, 333, keep), sb = stored_copy(b, 100000, keep);
  CHECK(compute_breakdown(sa, sb, odd).to_json().dump() == compute_breakdown(a, b, odd).to_json().dump());
}

TEST_CASE("one pass against two references gives each reference's figures, bit for bit") {
  using namespace ts;
  std::mt19937_64 rng(11);
  std::normal_distribution<double> n(0, 1);
  // Lengths: whole groups of stretches, a partial group, one short stretch.
  for (const int64_t len : {int64_t(4) * metric_detail::kChunk * 3, int64_t(4) * metric_detail::kChunk + 5000,
                            int64_t(777)}) {
    for (const DType ta : {DType::bf16, DType::f32, DType::f64}) {
      Tensor a({len}, ta), b({len}, DType::f32), c({len}, DType::f64);
      for (size_t i = 0; i < a.data.size(); ++i) {
        c.data[i] = n(rng);
        b.data[i] = held_as(DType::f32, c.data[i] * (1 + 1e-3 * n(rng)));
        a.data[i] = held_as(ta, c.data[i] * (1 + 1e-2 * n(rng)));
      }
      a.data[3] = NAN;
      b.data[len / 2] = INFINITY;
      std::vector<std::vector<unsigned char>> keep;
      const StoredTensor sa = stored_copy(a, 4099, keep);
      INFO(dtype_name(ta) << ", " << len << " elements");
      for (int isa : {2, 1, 0}) {
        metric_detail::lane_isa_cap() = isa;
        for (const TensorRef x : {TensorRef(a), TensorRef(sa)}) {
          const auto [vb, vc] = compute_metrics_pair(x, b, c);
          CHECK(vb.to_json().dump() == compute_metrics(a, b).to_json().dump());
          CHECK(vc.to_json().dump() == compute_metrics(a, c).to_json().dump());
          CHECK(vb.storage_ref == DType::f32);
          CHECK(vc.storage_ref == DType::f64);
        }
      }
      metric_detail::lane_isa_cap() = 2;
    }
  }
  Tensor a({10}, DType::f64), b({10}, DType::f64), c({11}, DType::f64);
  CHECK_THROWS_WITH(compute_metrics_pair(a, b, c), Catch::Contains("differs from reference"));
}
