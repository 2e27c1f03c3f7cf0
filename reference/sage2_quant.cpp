#include "reference/sage2_quant.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>

#include "core/error.hpp"
#include "reference/numerics/convert.hpp"

namespace ts::sage2 {

HeadMajor to_head_major(const BSHDView& v) {
  HeadMajor out;
  out.H = v.H;
  out.S = v.S;
  out.D = v.D;
  out.x.resize(static_cast<size_t>(v.H * v.S * v.D));
  for (int64_t h = 0; h < v.H; ++h)
    for (int64_t s = 0; s < v.S; ++s) {
      const double* r = v.row(s, h);
      float* o = out.head(h) + s * v.D;
      for (int64_t d = 0; d < v.D; ++d) o[d] = static_cast<float>(r[d * v.sD]);
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

float gpu_rcp_of_constant(float c) {
  // rcp.approx.ftz.f32 of the constants the quantisers divide by (127, 2.25,
  // 448), read on the H200 (scripts/gpu-division-facts, 2026-12-01), each equals
  // the correctly rounded reciprocal, so one rule covers them and any other
  // scale_max (the V kernel receives scale_max at run time).
  return 1.0f / c;
}

namespace {
// The per-group factors of the two INT8 recipes (quantize_int8 and the group
// helpers share them).
float warp_scale(float amax) { return amax * gpu_rcp_of_constant(127.0f); }
float warp_mult(float amax) { return 127.0f * gpu_rcp(amax); }
// Triton compiles `amax / 127. + 1e-7` to one fused multiply-add with the
// reciprocal: a single rounding (measured: every per_thread scale of the real
// kernel equals it, two roundings match only 70-75 %).
float thread_scale(float amax) { return std::fma(amax, gpu_rcp_of_constant(127.0f), 1e-7f); }
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
  q.codes.resize(x.x.size());
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
  HeadMajor out = k;
  for (int64_t h = 0; h < k.H; ++h) {
    float* x = out.head(h);
    const float* m = km.data() + h * k.D;
    for (int64_t s = 0; s < k.S; ++s)
      for (int64_t d = 0; d < k.D; ++d) {
        const float diff = x[s * k.D + d] - m[d];
        x[s * k.D + d] = g == Granularity::per_thread ? round_to_dtype(diff, input_dtype) : diff;
      }
  }
  return out;
}

Fp8V quantize_v_fp8(const HeadMajor& v, float scale_max) {
  Fp8V f;
  f.H = v.H;
  f.S = v.S;
  f.D = v.D;
  f.codes.assign(v.x.size(), 0);
  f.values.assign(v.x.size(), 0.0f);
  f.scales.assign(static_cast<size_t>(v.H * v.D), 0.0f);
  for (int64_t h = 0; h < v.H; ++h) {
    const float* x = v.head(h);
    std::vector<float> amax(static_cast<size_t>(v.D), 0.0f);
    for (int64_t s = 0; s < v.S; ++s)
      for (int64_t d = 0; d < v.D; ++d) amax[d] = std::max(amax[d], std::fabs(x[s * v.D + d]));
    std::vector<float> mult(static_cast<size_t>(v.D), 0.0f);
    for (int64_t d = 0; d < v.D; ++d) {
      if (amax[d] == 0.0f) {
        ++f.zero_channels;
        continue;  // scale 0, codes 0: the channel's output is exactly 0
      }
      f.scales[h * v.D + d] = amax[d] * gpu_rcp_of_constant(scale_max);
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
  return f;
}

}  // namespace ts::sage2
