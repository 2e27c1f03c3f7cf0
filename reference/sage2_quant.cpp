#include "reference/sage2_quant.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

#include "core/error.hpp"
#include "reference/numerics/convert.hpp"
#include "reference/zero_tensor.hpp"

namespace ts::sage2 {

HeadMajor to_head_major(const BSHDView& v, const StoredTensor* stored) {
  HeadMajor out;
  out.H = v.H;
  out.S = v.S;
  out.D = v.D;
  zero_fill(out.x, static_cast<size_t>(v.H * v.S * v.D));
  if (!v.p && !stored) throw InternalError("to_head_major: neither values nor stored elements");
  // Heads times stretches of tokens: 56 heads alone leave cores idle on a 16-core machine.
  constexpr int64_t kTokens = 512;
  const int64_t stretches = (v.S + kTokens - 1) / kTokens;
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t h = 0; h < v.H; ++h)
    for (int64_t c = 0; c < stretches; ++c) {
      std::vector<double> row(v.p ? 0 : static_cast<size_t>(v.D));
      for (int64_t s = c * kTokens; s < std::min(v.S, (c + 1) * kTokens); ++s) {
        float* o = out.head(h) + s * v.D;
        if (v.p) {
          const double* r = v.row(s, h);
          for (int64_t d = 0; d < v.D; ++d) o[d] = static_cast<float>(r[d * v.sD]);
          continue;
        }
        // The stored [S, H, D] elements; bfloat16 widened from its bits (the float64 path's value).
        const int64_t first = (s * v.H + h) * v.D;
        if (const unsigned char* b = stored->dtype == DType::bf16 ? stored->bytes_of(first, v.D) : nullptr) {
          for (int64_t d = 0; d < v.D; ++d) {
            uint16_t bits;
            std::memcpy(&bits, b + 2 * d, 2);
            o[d] = num::bf16_from_bits(bits);
          }
          continue;
        }
        stored->to_double(first, v.D, row.data());
        for (int64_t d = 0; d < v.D; ++d) o[d] = static_cast<float>(row[static_cast<size_t>(d)]);
      }
    }
  return out;
}

float round_to_dtype(float x, DType t) {
  switch (t) {
    case DType::bf16: return num::bf16_round(x);
    case DType::f16: return num::fp16_round(x);
    default: return x;
  }
}

std::vector<float> smoothing_mean(const HeadMajor& k, DType input_dtype) {
  std::vector<float> km(static_cast<size_t>(k.H * k.D), 0.0f);
  const float inv_n = 1.0f / static_cast<float>(k.S);
#pragma omp parallel for schedule(static)
  for (int64_t h = 0; h < k.H; ++h) {
    std::vector<float> sum(static_cast<size_t>(k.D), 0.0f);
    const float* x = k.head(h);
    for (int64_t s = 0; s < k.S; ++s)
      for (int64_t d = 0; d < k.D; ++d) sum[d] += x[s * k.D + d];
    for (int64_t d = 0; d < k.D; ++d) km[h * k.D + d] = round_to_dtype(sum[d] * inv_n, input_dtype);
  }
  return km;
}

int64_t ScaleLayout::n_scales(int64_t S) const {
  const int64_t blocks = (S + blk - 1) / blk;
  if (g == Granularity::per_warp) return query ? blocks * (blk / warp) : blocks;
  return blocks * (blk / warp) * (query ? 8 : 4);
}

int64_t ScaleLayout::index(int64_t s) const {
  if (g == Granularity::per_warp) return query ? s / warp : s / blk;
  // Triton per_thread: Q group t of a warp holds tokens base+8j+t; K group t
  // holds base+8j+2t and base+8j+2t+1.
  const int64_t in_warp = s % warp;
  return query ? (s / warp) * 8 + in_warp % 8 : (s / warp) * 4 + (in_warp % 8) / 2;
}

namespace {
// rcp.approx.ftz.f32 of 1 + m/128, m = 0..127 (every bf16 mantissa), read on
// the H200 (benchmarks/gpu-division-facts --rcp-only, 2026-12-01). 20 entries are
// one ulp off the correctly rounded reciprocal (m = 4, 6, 11, 13, 20, 22, 37,
// 38, 51, 61, 65, 66, 81, 91, 109, 115, 116, 118, 121, 127); 1/127, 1/2.25 and
// 1/448 are not among them. The instruction scales with the exponent (the
// binade [2, 4) gives exactly half of [1, 2), measured).
constexpr uint32_t kRcpBf16[128] = {
    0x3f800000, 0x3f7e03f8, 0x3f7c0fc1, 0x3f7a232d, 0x3f783e0f, 0x3f76603e,
    0x3f74898e, 0x3f72b9d6, 0x3f70f0f1, 0x3f6f2eb7, 0x3f6d7304, 0x3f6bbdb2,
    0x3f6a0ea1, 0x3f6865ad, 0x3f66c2b4, 0x3f652598, 0x3f638e39, 0x3f61fc78,
    0x3f607038, 0x3f5ee95c, 0x3f5d67c8, 0x3f5beb62, 0x3f5a740d, 0x3f5901b2,
    0x3f579436, 0x3f562b81, 0x3f54c77b, 0x3f53680d, 0x3f520d21, 0x3f50b6a0,
    0x3f4f6475, 0x3f4e168a, 0x3f4ccccd, 0x3f4b8728, 0x3f4a4588, 0x3f4907da,
    0x3f47ce0c, 0x3f46980d, 0x3f4565c9, 0x3f443730, 0x3f430c31, 0x3f41e4bc,
    0x3f40c0c1, 0x3f3fa030, 0x3f3e82fa, 0x3f3d6910, 0x3f3c5264, 0x3f3b3ee7,
    0x3f3a2e8c, 0x3f392144, 0x3f381703, 0x3f370fbc, 0x3f360b61, 0x3f3509e7,
    0x3f340b41, 0x3f330f63, 0x3f321643, 0x3f311fd4, 0x3f302c0b, 0x3f2f3ade,
    0x3f2e4c41, 0x3f2d602c, 0x3f2c7692, 0x3f2b8f6a, 0x3f2aaaab, 0x3f29c84b,
    0x3f28e840, 0x3f280a81, 0x3f272f05, 0x3f2655c4, 0x3f257eb5, 0x3f24a9cf,
    0x3f23d70a, 0x3f23065e, 0x3f2237c3, 0x3f216b31, 0x3f20a0a1, 0x3f1fd80a,
    0x3f1f1166, 0x3f1e4cad, 0x3f1d89d9, 0x3f1cc8e2, 0x3f1c09c1, 0x3f1b4c70,
    0x3f1a90e8, 0x3f19d723, 0x3f191f1a, 0x3f1868c8, 0x3f17b426, 0x3f17012e,
    0x3f164fda, 0x3f15a026, 0x3f14f209, 0x3f144581, 0x3f139a86, 0x3f12f114,
    0x3f124925, 0x3f11a2b4, 0x3f10fdbc, 0x3f105a38, 0x3f0fb824, 0x3f0f177a,
    0x3f0e7835, 0x3f0dda52, 0x3f0d3dcb, 0x3f0ca29c, 0x3f0c08c1, 0x3f0b7034,
    0x3f0ad8f3, 0x3f0a42f9, 0x3f09ae41, 0x3f091ac7, 0x3f088889, 0x3f07f781,
    0x3f0767ab, 0x3f06d906, 0x3f064b8b, 0x3f05bf37, 0x3f053409, 0x3f04a9fa,
    0x3f042108, 0x3f039931, 0x3f03126f, 0x3f028cc0, 0x3f020821, 0x3f01848e,
    0x3f010204, 0x3f008080,
};
}  // namespace

float gpu_rcp(float x) {
  const uint32_t u = std::bit_cast<uint32_t>(x);
  const uint32_t e = (u >> 23) & 0xFFu;
  // A bf16 mantissa and a normal input and result: the measured table.
  if ((u & 0xFFFFu) == 0 && e >= 1 && e <= 252) {
    const float r = std::bit_cast<float>(kRcpBf16[(u >> 16) & 0x7Fu]);  // in (0.5, 1]
    return std::copysign(std::ldexp(r, 127 - static_cast<int>(e)), x);
  }
  return 1.0f / x;
}

namespace {
// The per-group factors of the two INT8 recipes (quantize_int8 and the group
// helpers share them).
float warp_scale(float amax) { return amax * gpu_rcp(127.0f); }
float warp_mult(float amax) { return 127.0f * gpu_rcp(amax); }
// Triton compiles `amax / 127. + 1e-7` to one fused multiply-add with the
// reciprocal computed at compile time: a single rounding (measured: every
// per_thread scale of the real kernel equals it, two roundings match only
// 70-75 %).
float thread_scale(float amax) { return std::fma(amax, 1.0f / 127.0f, 1e-7f); }
}  // namespace

float quant_group_per_warp(const float* x, int64_t n, int8_t* codes) {
  float amax = 1e-7f;
  for (int64_t i = 0; i < n; ++i) amax = std::max(amax, std::fabs(x[i]));
  const float mult = warp_mult(amax);
  for (int64_t i = 0; i < n; ++i) codes[i] = num::int8_rni_sat(x[i] * mult);
  return warp_scale(amax);
}

float quant_group_per_thread(const float* x, int64_t n, int8_t* codes) {
  float amax = 0.0f;
  for (int64_t i = 0; i < n; ++i) amax = std::max(amax, std::fabs(x[i]));
  const float scale = thread_scale(amax);
  const float mult = gpu_rcp(scale);
  for (int64_t i = 0; i < n; ++i) codes[i] = num::int8_round_half_away_trunc(x[i] * mult);
  return scale;
}

Int8Tensor quantize_int8(const HeadMajor& x, const ScaleLayout& layout) {
  if (layout.blk <= 0 || layout.warp <= 0 || layout.blk % layout.warp != 0 ||
      (layout.g == Granularity::per_thread && layout.warp % 8 != 0))
    throw InputError("sage2: block " + std::to_string(layout.blk) + " / warp " +
                     std::to_string(layout.warp) +
                     " geometry invalid (block a multiple of warp, warp a multiple of 8)");
  Int8Tensor q;
  q.H = x.H;
  q.S = x.S;
  q.D = x.D;
  q.n_scales = layout.n_scales(x.S);
  zero_fill(q.codes, x.x.size());
  q.scales.assign(static_cast<size_t>(x.H * q.n_scales), 0.0f);
  q.scale_of.resize(static_cast<size_t>(x.S));
  for (int64_t s = 0; s < x.S; ++s) q.scale_of[s] = static_cast<int32_t>(layout.index(s));
  const bool warp = layout.g == Granularity::per_warp;
#pragma omp parallel for schedule(static)
  for (int64_t h = 0; h < x.H; ++h) {
    const float* xh = x.head(h);
    // The recipe's amax per group, then one pass of codes with that scale.
    std::vector<float> amax(static_cast<size_t>(q.n_scales), warp ? 1e-7f : 0.0f);
    for (int64_t s = 0; s < x.S; ++s) {
      float& a = amax[q.scale_of[s]];
      for (int64_t d = 0; d < x.D; ++d) a = std::max(a, std::fabs(xh[s * x.D + d]));
    }
    float* sc = q.scales.data() + h * q.n_scales;
    std::vector<float> mult(static_cast<size_t>(q.n_scales));
    for (int64_t g = 0; g < q.n_scales; ++g) {
      sc[g] = warp ? warp_scale(amax[g]) : thread_scale(amax[g]);
      mult[g] = warp ? warp_mult(amax[g]) : gpu_rcp(sc[g]);
    }
    int8_t* c = q.codes.data() + h * x.S * x.D;
    for (int64_t s = 0; s < x.S; ++s) {
      const int64_t g = q.scale_of[s];
      for (int64_t d = 0; d < x.D; ++d) {
        const float v = xh[s * x.D + d];
        c[s * x.D + d] = warp ? num::int8_rni_sat(v * mult[g])
                              : num::int8_round_half_away_trunc(v * mult[g]);
      }
    }
  }
  return q;
}

HeadMajor subtract_mean(const HeadMajor& k, const std::vector<float>& km, Granularity g,
                        DType input_dtype) {
  HeadMajor out;
  out.H = k.H;
  out.S = k.S;
  out.D = k.D;
  zero_fill(out.x, k.x.size());
#pragma omp parallel for schedule(static)
  for (int64_t h = 0; h < k.H; ++h) {
    const float* x = k.head(h);
    float* y = out.head(h);
    const float* m = km.data() + h * k.D;
    for (int64_t s = 0; s < k.S; ++s)
      for (int64_t d = 0; d < k.D; ++d) {
        const float diff = x[s * k.D + d] - m[d];
        y[s * k.D + d] = g == Granularity::per_thread ? round_to_dtype(diff, input_dtype) : diff;
      }
  }
  return out;
}

Fp8V quantize_v_fp8(const HeadMajor& v, float scale_max) {
  Fp8V f;
  f.H = v.H;
  f.S = v.S;
  f.D = v.D;
  zero_fill(f.codes, v.x.size());
  zero_fill(f.values, v.x.size());
  f.scales.assign(static_cast<size_t>(v.H * v.D), 0.0f);
  int64_t zero_channels = 0;
  // Heads are independent: the same bits at any thread count (at block24 the
  // serial loop took most of sage2_cuda's host time).
#pragma omp parallel for schedule(static) reduction(+ : zero_channels)
  for (int64_t h = 0; h < v.H; ++h) {
    const float* x = v.head(h);
    std::vector<float> amax(static_cast<size_t>(v.D), 0.0f);
    for (int64_t s = 0; s < v.S; ++s)
      for (int64_t d = 0; d < v.D; ++d) amax[d] = std::max(amax[d], std::fabs(x[s * v.D + d]));
    std::vector<float> mult(static_cast<size_t>(v.D), 0.0f);
    for (int64_t d = 0; d < v.D; ++d) {
      if (amax[d] == 0.0f) {
        ++zero_channels;
        continue;  // scale 0, codes 0: the channel's output is exactly 0
      }
      f.scales[h * v.D + d] = amax[d] * gpu_rcp(scale_max);
      mult[d] = scale_max * gpu_rcp(amax[d]);
    }
    uint8_t* c = f.codes.data() + h * v.S * v.D;
    float* val = f.values.data() + h * v.S * v.D;
    for (int64_t s = 0; s < v.S; ++s)
      for (int64_t d = 0; d < v.D; ++d) {
        if (amax[d] == 0.0f) continue;
        const uint8_t code = num::e4m3_encode(x[s * v.D + d] * mult[d]);
        c[s * v.D + d] = code;
        val[s * v.D + d] = num::e4m3_decode(code);
      }
  }
  f.zero_channels = zero_channels;
  return f;
}

}  // namespace ts::sage2
