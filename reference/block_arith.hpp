#pragma once
// The block's per-element and per-row arithmetic (docs/block.md "Where
// rounding happens"), one definition for the host stages (block_stages.cpp)
// and their device mirror (reference/cuda/block_stages.cu, built with
// -fmad=false), so that both give the same bits.
//   *_bf16: float32 arithmetic in the order written, one round to bf16.
//   *_f64 : float64, no rounding.
#include <cmath>
#include <cstdint>

#include "reference/numerics/convert.hpp"
#include "reference/numerics/detmath.hpp"
#include "reference/numerics/host_device.hpp"

namespace ts::blk {

TS_HD inline float modulate_bf16(float h, float shift, float scale) {
  return num::bf16_round(h * (1.0f + scale) + shift);
}
TS_HD inline float gated_residual_bf16(float base, float gate, float y) {
  return num::bf16_round(base + gate * y);
}
// g / (1 + float(exp(-g))), exp from detmath in float64.
TS_HD inline float silu_f32(float g) {
  const float e = static_cast<float>(detmath::exp(-static_cast<double>(g)));
  return g / (1.0f + e);
}
TS_HD inline float swiglu_bf16(float value, float gate) { return num::bf16_round(value * silu_f32(gate)); }

TS_HD inline double modulate_f64(double h, double shift, double scale) { return h * (1.0 + scale) + shift; }
TS_HD inline double gated_residual_f64(double base, double gate, double y) { return base + gate * y; }
TS_HD inline double silu_f64(double g) { return g / (1.0 + detmath::exp(-g)); }
TS_HD inline double swiglu_f64(double value, double gate) { return value * silu_f64(gate); }

// RMSNorm of one row in bf16 arithmetic: float32 sum of squares in index
// order, inv = 1 / sqrt(ss / n + eps) in float32, out = bf16((x * inv) * w).
// X and W are anything that converts to float (the host's float64 tensors
// holding the values, the device's float32 copies); w may be null.
template <class X, class W, class O>
TS_HD inline void rms_norm_row_bf16(const X* x, int64_t n, const W* w, double eps, O* out) {
  float ss = 0.0f;
  for (int64_t i = 0; i < n; ++i) {
    const float v = static_cast<float>(x[i]);
    ss += v * v;
  }
  const float inv = 1.0f / std::sqrt(ss / static_cast<float>(n) + static_cast<float>(eps));
  for (int64_t i = 0; i < n; ++i) {
    const float wi = w ? static_cast<float>(w[i]) : 1.0f;
    out[i] = num::bf16_round((static_cast<float>(x[i]) * inv) * wi);
  }
}

// One rotate-half pair of RoPE: (x1, x2) by the angle with cosine co, sine si.
TS_HD inline void rope_pair_bf16(float x1, float x2, float co, float si, float* y1, float* y2) {
  *y1 = num::bf16_round(x1 * co - x2 * si);
  *y2 = num::bf16_round(x2 * co + x1 * si);
}
TS_HD inline void rope_pair_f64(double x1, double x2, double co, double si, double* y1, double* y2) {
  *y1 = x1 * co - x2 * si;
  *y2 = x2 * co + x1 * si;
}

}  // namespace ts::blk
