#pragma once
// Private to gates/: the partial sums behind every MetricSet and the ulp
// distance, shared by the scalar and the vector passes (gates/metric_pass.cpp).
// Every accumulator adds its elements one at a time in index order; the passes
// differ only in how many accumulators advance at once, so every figure has
// the same bits whichever pass computed it, at any thread count.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "core/stored_tensor.hpp"
#include "core/tensor.hpp"
#include "gates/metrics.hpp"

namespace ts::metric_detail {

// x rounded to nearest (ties to even) in a binary format of `mant` stored
// significand bits and `ebits` exponent bits, as its bit pattern without the
// sign; beyond the largest finite value it is infinity. Integer operations on
// the float64 bits, exact for every finite x. (float16: 10, 5; bfloat16: 7, 8.)
template <int mant, int ebits>
inline uint32_t rounded_magnitude(double x) {
  constexpr int bias = (1 << (ebits - 1)) - 1;
  constexpr uint64_t inf = uint64_t((1u << ebits) - 1) << mant;
  uint64_t ax;
  std::memcpy(&ax, &x, sizeof ax);
  ax &= 0x7fffffffffffffffull;
  const int64_t e = int64_t(ax >> 52) - 1023;  // unbiased exponent (subnormal doubles: -1023)
  if (e >= 1 - bias) {
    // Rounding the exponent and significand fields together carries a
    // significand that rounds up to 2 into the next exponent.
    constexpr int s = 52 - mant;
    const uint64_t r = (ax + ((uint64_t(1) << (s - 1)) - 1) + ((ax >> s) & 1)) >> s;
    const uint64_t field = r - (uint64_t(1023 - bias) << mant);
    return static_cast<uint32_t>(field >= inf ? inf : field);
  }
  if (ax == 0) return 0;
  // Subnormal in the target: a multiple of 2^(1 - bias - mant).
  const uint64_t m = (e == -1023 ? 0 : uint64_t(1) << 52) | (ax & ((uint64_t(1) << 52) - 1));
  const int64_t shift = (e == -1023 ? -1022 : e) * -1 + 52 - mant - bias + 1;  // >= 53 - mant
  if (shift >= 64) return 0;
  return static_cast<uint32_t>((m + ((uint64_t(1) << (shift - 1)) - 1) + ((m >> shift) & 1)) >> shift);
}

template <int mant, int ebits>
inline int64_t ordered_small(double x) {
  const int64_t mag = rounded_magnitude<mant, ebits>(x);
  return std::signbit(x) ? -mag : mag;
}

inline int64_t ordered_f32(double x) {
  const float f = static_cast<float>(x);
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  const int64_t mag = u & 0x7fffffffu;
  return (u & 0x80000000u) ? -mag : mag;
}

// ulp_distance (gates/metrics.hpp) for finite x and y.
inline double finite_ulp_distance(double x, double y, DType storage) {
  switch (storage) {
    case DType::bf16: return std::fabs(static_cast<double>(ordered_small<7, 8>(x) - ordered_small<7, 8>(y)));
    case DType::f16: return std::fabs(static_cast<double>(ordered_small<10, 5>(x) - ordered_small<10, 5>(y)));
    case DType::f32: return std::fabs(static_cast<double>(ordered_f32(x) - ordered_f32(y)));
    case DType::f64: {
      uint64_t ux, uy;
      std::memcpy(&ux, &x, sizeof ux);
      std::memcpy(&uy, &y, sizeof uy);
      const uint64_t mx = ux & 0x7fffffffffffffffull, my = uy & 0x7fffffffffffffffull;
      const bool nx = (ux >> 63) != 0 && mx != 0, ny = (uy >> 63) != 0 && my != 0;
      if (nx == ny) return static_cast<double>(mx > my ? mx - my : my - mx);
      return static_cast<double>(mx) + static_cast<double>(my);
    }
    default:
      return std::fabs(x - y);  // integer storage: one unit is 1
  }
}

inline double any_ulp_distance(double x, double y, DType storage) {
  if (!std::isfinite(x) || !std::isfinite(y)) {
    if (std::isinf(x) && x == y) return 0.0;
    return std::numeric_limits<double>::infinity();
  }
  return finite_ulp_distance(x, y, storage);
}

// NaN must not hide in a max: once NaN, the max stays NaN.
inline void max_into(double& m, double v) {
  if (std::isnan(v) || v > m) m = v;
}

// Partial sums of one fixed stretch of elements.
struct Sums {
  int64_t n = 0;
  double d2 = 0, a2 = 0, b2 = 0, ab = 0, absd = 0, absb = 0, max_absd = 0;
  int64_t nonfinite_a = 0, nonfinite_b = 0, zeros_a = 0, zeros_b = 0, identical = 0;
  double ulp_max = 0;

  void add(double x, double y, DType storage) {
    ++n;
    if (!std::isfinite(x)) ++nonfinite_a;
    if (!std::isfinite(y)) ++nonfinite_b;
    if (x == 0.0) ++zeros_a;
    if (y == 0.0) ++zeros_b;
    const double d = x - y;
    d2 += d * d;
    a2 += x * x;
    b2 += y * y;
    ab += x * y;
    absd += std::fabs(d);
    absb += std::fabs(y);
    max_into(max_absd, std::fabs(d));
    const double u = any_ulp_distance(x, y, storage);
    if (u > ulp_max) ulp_max = u;
    if (u == 0.0) ++identical;
  }

  void merge(const Sums& o) {
    n += o.n;
    d2 += o.d2;
    a2 += o.a2;
    b2 += o.b2;
    ab += o.ab;
    absd += o.absd;
    absb += o.absb;
    max_into(max_absd, o.max_absd);
    nonfinite_a += o.nonfinite_a;
    nonfinite_b += o.nonfinite_b;
    zeros_a += o.zeros_a;
    zeros_b += o.zeros_b;
    if (o.ulp_max > ulp_max) ulp_max = o.ulp_max;
    identical += o.identical;
  }

  MetricSet finish() const;
};

// The overall figures' stretches: kChunk consecutive elements each, combined
// in index order.
constexpr int64_t kChunk = 1 << 14;
constexpr int64_t kQueryBlock = 128;

// One pass over a and b (same length n): the stretch sums of compute_metrics.
// Stored operands are converted in small tiles on the way (exact), so the
// sums do not depend on how an operand is held.
void chunk_sums(TensorRef a, TensorRef b, int64_t n, DType storage, Sums* chunks);
// chunk_sums(a, b, ...) and chunk_sums(a, c, ...) in one pass over a: each
// group of stretches is summed against b, then against c while it is still in
// the core's cache (a candidate against its baseline and its exact reference:
// at block24 2.2 GB of a read once, not twice). Each stretch's sums are
// exactly chunk_sums'.
void chunk_sums_pair(TensorRef a, TensorRef b, TensorRef c, int64_t n, DType storage_b, DType storage_c,
                     Sums* chunks_b, Sums* chunks_c);

// One pass over [S, H, D] tensors: per query block, the sums of each head
// and of each frame slot (frame_of[s] in [0, frames]); and, when `chunks` is
// not null, the overall stretch sums as chunk_sums computes them.
void breakdown_sums(TensorRef a, TensorRef b, int64_t S, int64_t H, int64_t D,
                    const int64_t* frame_of, int64_t frames, DType storage, Sums* head_sums,
                    Sums* frame_sums, Sums* chunks);
// Whether breakdown_sums can compute the overall stretches in the same pass:
// each stretch must lie inside one query block and hold whole rows.
bool breakdown_covers_chunks(int64_t H, int64_t D);
// The most a pass may use: 2 AVX-512, 1 AVX2, 0 SSE2 (tests lower it to run
// every build of the passes); lane_isa_in_use: what this CPU then runs.
int& lane_isa_cap();
int lane_isa_in_use();

}  // namespace ts::metric_detail
