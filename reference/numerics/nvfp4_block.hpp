#pragma once
// The per-16-block steps of NVFP4 quantisation (docs/emulation.md "The NVFP4
// linear layer"): one definition for the host quantiser (nvfp4.cpp) and the
// device block's activation quantiser (reference/cuda/block_linear.cu), so
// both give the same codes.
#include <cfloat>
#include <cstdint>

#include "reference/numerics/convert.hpp"
#include "reference/numerics/host_device.hpp"

namespace ts::num {

inline constexpr int kNvfp4Block = 16;

// Which software stack's float32 operation order the quantiser reproduces.
//  te       TransformerEngine reference_nvfp4.py (and TE's CUDA kernels that
//           claim an exact match with it): sb = e4m3((bamax / 6) * S_enc),
//           element scale enc = 1 / (float(sb) * S_dec), q = e2m1(x * enc).
//  te_rcp6  newer TE kernels: sb = e4m3(bamax * (S_enc * float(1/6))).
//  modelopt NVIDIA ModelOpt: s2 = amax / 2688, sb = e4m3(bamax / (6 * s2))
//           (an all-zero block gets scale 1.0), q = e2m1(x / (float(sb) * s2)).
enum class Nvfp4Recipe { te, te_rcp6, modelopt };

namespace nvfp4_detail {
inline constexpr float kE2m1Max = 6.0f;
inline constexpr float kE4m3Max = 448.0f;
TS_HD inline float fmin_(float a, float b) { return b < a ? b : a; }  // std::min's choice
}  // namespace nvfp4_detail

// E4M3 code of one block's decode scale from the block's amax and the global
// scales.
TS_HD inline uint8_t nvfp4_block_scale_code(float bamax, float s_enc, float s_dec, Nvfp4Recipe recipe) {
  using namespace nvfp4_detail;
  float s = 0.0f;
  switch (recipe) {
    case Nvfp4Recipe::te:
      s = fmin_((bamax / kE2m1Max) * s_enc, FLT_MAX);
      break;
    case Nvfp4Recipe::te_rcp6:
      s = fmin_(bamax * (s_enc * (1.0f / kE2m1Max)), FLT_MAX);
      break;
    case Nvfp4Recipe::modelopt:
      s = bamax / (kE2m1Max * s_dec);
      if (s == 0.0f) s = 1.0f;  // ModelOpt: per_block_scale[per_block_scale == 0] = 1.0
      break;
  }
  // min() then e4m3: values above 448 saturate (satfinite; ModelOpt's torch
  // cast would give NaN far above 448, the spec's clamp is kept for all).
  return e4m3_encode(fmin_(s, kE4m3Max));
}

// The factor a block's elements are encoded with, from its decoded scale sbf:
// modelopt divides by it, the te recipes multiply by it.
TS_HD inline float nvfp4_element_factor(float sbf, float s_dec, Nvfp4Recipe recipe) {
  if (recipe == Nvfp4Recipe::modelopt) return sbf * s_dec;
  return nvfp4_detail::fmin_(1.0f / (sbf * s_dec), FLT_MAX);
}

// E2M1 code of one element. modelopt: x / 0 saturates to +-6 like TE's
// FLT_MAX encode scale; 0 stays 0. te: clamp(x * enc, -6, 6) is e2m1_encode's
// own saturation.
TS_HD inline uint8_t nvfp4_encode_element(float x, float factor, Nvfp4Recipe recipe) {
  if (recipe == Nvfp4Recipe::modelopt) return e2m1_encode(x == 0.0f ? x : x / factor);
  return e2m1_encode(x * factor);
}

}  // namespace ts::num
