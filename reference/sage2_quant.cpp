#include "reference/sage2_quant.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

#include "core/error.hpp"
#include "reference/numerics/convert.hpp"
#include "reference/sage2_recipe.hpp"
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
  return scale_count(g == Granularity::per_thread, query, blk, warp, S);
}

int64_t ScaleLayout::index(int64_t s) const {
  return scale_index(g == Granularity::per_thread, query, blk, warp, s);
}

namespace {
constexpr uint32_t kRcpBf16[128] = {TS_SAGE2_RCP_BF16_TABLE};
}  // namespace

float gpu_rcp(float x) { return gpu_rcp_from(x, kRcpBf16); }

namespace {
// The per-group factors of the two INT8 recipes (quantize_int8 and the group
// helpers share them).
float warp_scale(float amax) { return sage2::warp_scale(amax, kRcpBf16); }
float warp_mult(float amax) { return sage2::warp_mult(amax, kRcpBf16); }
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
