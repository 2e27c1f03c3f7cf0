#pragma once
// The scalar steps of SageAttention 2's quantisers (docs/emulation.md "sage2"), one definition
// for the host quantisers (sage2_quant.cpp) and their device mirrors (cuda/sage2_quant.cu, built
// with -fmad=false), so that both give the same bits: which scale a token uses, the reciprocal
// the kernels divide by, and each recipe's scale and multiplier from a group's amax.
#include <cmath>
#include <cstdint>

#include "reference/numerics/convert.hpp"
#include "reference/numerics/host_device.hpp"

// rcp.approx.ftz.f32 of 1 + m/128, m = 0..127 (every bf16 mantissa), read on the H200
// (benchmarks/gpu-division-facts --rcp-only, 2026-12-01). 20 entries are one ulp off the
// correctly rounded reciprocal (m = 4, 6, 11, 13, 20, 22, 37, 38, 51, 61, 65, 66, 81, 91, 109,
// 115, 116, 118, 121, 127); 1/127, 1/2.25 and 1/448 are not among them. The instruction scales
// with the exponent (the binade [2, 4) gives exactly half of [1, 2), measured). A list, not an
// array: the host and the device each keep their own copy of it (device code cannot read a host
// array), from this one text.
#define TS_SAGE2_RCP_BF16_TABLE                                                                        \
  0x3f800000, 0x3f7e03f8, 0x3f7c0fc1, 0x3f7a232d, 0x3f783e0f, 0x3f76603e, 0x3f74898e, 0x3f72b9d6,     \
      0x3f70f0f1, 0x3f6f2eb7, 0x3f6d7304, 0x3f6bbdb2, 0x3f6a0ea1, 0x3f6865ad, 0x3f66c2b4, 0x3f652598, \
      0x3f638e39, 0x3f61fc78, 0x3f607038, 0x3f5ee95c, 0x3f5d67c8, 0x3f5beb62, 0x3f5a740d, 0x3f5901b2, \
      0x3f579436, 0x3f562b81, 0x3f54c77b, 0x3f53680d, 0x3f520d21, 0x3f50b6a0, 0x3f4f6475, 0x3f4e168a, \
      0x3f4ccccd, 0x3f4b8728, 0x3f4a4588, 0x3f4907da, 0x3f47ce0c, 0x3f46980d, 0x3f4565c9, 0x3f443730, \
      0x3f430c31, 0x3f41e4bc, 0x3f40c0c1, 0x3f3fa030, 0x3f3e82fa, 0x3f3d6910, 0x3f3c5264, 0x3f3b3ee7, \
      0x3f3a2e8c, 0x3f392144, 0x3f381703, 0x3f370fbc, 0x3f360b61, 0x3f3509e7, 0x3f340b41, 0x3f330f63, \
      0x3f321643, 0x3f311fd4, 0x3f302c0b, 0x3f2f3ade, 0x3f2e4c41, 0x3f2d602c, 0x3f2c7692, 0x3f2b8f6a, \
      0x3f2aaaab, 0x3f29c84b, 0x3f28e840, 0x3f280a81, 0x3f272f05, 0x3f2655c4, 0x3f257eb5, 0x3f24a9cf, \
      0x3f23d70a, 0x3f23065e, 0x3f2237c3, 0x3f216b31, 0x3f20a0a1, 0x3f1fd80a, 0x3f1f1166, 0x3f1e4cad, \
      0x3f1d89d9, 0x3f1cc8e2, 0x3f1c09c1, 0x3f1b4c70, 0x3f1a90e8, 0x3f19d723, 0x3f191f1a, 0x3f1868c8, \
      0x3f17b426, 0x3f17012e, 0x3f164fda, 0x3f15a026, 0x3f14f209, 0x3f144581, 0x3f139a86, 0x3f12f114, \
      0x3f124925, 0x3f11a2b4, 0x3f10fdbc, 0x3f105a38, 0x3f0fb824, 0x3f0f177a, 0x3f0e7835, 0x3f0dda52, \
      0x3f0d3dcb, 0x3f0ca29c, 0x3f0c08c1, 0x3f0b7034, 0x3f0ad8f3, 0x3f0a42f9, 0x3f09ae41, 0x3f091ac7, \
      0x3f088889, 0x3f07f781, 0x3f0767ab, 0x3f06d906, 0x3f064b8b, 0x3f05bf37, 0x3f053409, 0x3f04a9fa, \
      0x3f042108, 0x3f039931, 0x3f03126f, 0x3f028cc0, 0x3f020821, 0x3f01848e, 0x3f010204, 0x3f008080

namespace ts::sage2 {

// gpu_rcp (sage2_quant.hpp) given the table: a bf16 mantissa with a normal input and result reads
// it, scaled by the exponent (a power-of-two product, exact: both factors and the result are
// normal); anything else is the correctly rounded reciprocal.
TS_HD inline float gpu_rcp_from(float x, const uint32_t* table) {
  const uint32_t u = num::detail::f2u(x);
  const uint32_t e = (u >> 23) & 0xFFu;
  if ((u & 0xFFFFu) == 0 && e >= 1 && e <= 252) {
    const float r = num::detail::u2f(table[(u >> 16) & 0x7Fu]);   // in (0.5, 1]
    const float pow2 = num::detail::u2f((254u - e) << 23);         // 2^(127 - e), normal for e in [1, 252]
    return num::detail::u2f(num::detail::f2u(r * pow2) | (u & 0x80000000u));
  }
  return 1.0f / x;
}

// Which of a head's scales token s uses (ScaleLayout::index).
TS_HD inline int64_t scale_index(bool per_thread, bool query, int64_t blk, int64_t warp, int64_t s) {
  if (!per_thread) return query ? s / warp : s / blk;
  // Triton per_thread: Q group t of a warp holds tokens base+8j+t; K group t
  // holds base+8j+2t and base+8j+2t+1.
  const int64_t in_warp = s % warp;
  return query ? (s / warp) * 8 + in_warp % 8 : (s / warp) * 4 + (in_warp % 8) / 2;
}

// How many scales a head's padded array holds (ScaleLayout::n_scales): every index scale_index
// gives for s < S is below it (per_thread indices are not monotonic in s: the last token's is
// not the largest).
TS_HD inline int64_t scale_count(bool per_thread, bool query, int64_t blk, int64_t warp, int64_t S) {
  const int64_t blocks = (S + blk - 1) / blk;
  if (!per_thread) return query ? blocks * (blk / warp) : blocks;
  return blocks * (blk / warp) * (query ? 8 : 4);
}

// The tokens [first, last) among which group g's lie (every token of the range whose
// scale_index is g): its warp, or per_warp key groups their block.
TS_HD inline void scale_group_range(bool per_thread, bool query, int64_t blk, int64_t warp, int64_t g,
                                    int64_t* first, int64_t* last) {
  const int64_t size = per_thread ? warp : query ? warp : blk;
  const int64_t unit = per_thread ? g / (query ? 8 : 4) : g;
  *first = unit * size;
  *last = *first + size;
}

// The recipes' starting amax (what a group of zeros keeps).
TS_HD inline float amax_start(bool per_thread) { return per_thread ? 0.0f : 1e-7f; }

// per_warp: scale = amax*rcp(127), codes from x * (127*rcp(amax)), rni.sat.
TS_HD inline float warp_scale(float amax, const uint32_t* rcp_table) {
  return amax * gpu_rcp_from(127.0f, rcp_table);
}
TS_HD inline float warp_mult(float amax, const uint32_t* rcp_table) { return 127.0f * gpu_rcp_from(amax, rcp_table); }
// per_thread: Triton compiles `amax / 127. + 1e-7` to one fused multiply-add with the reciprocal
// computed at compile time: a single rounding (measured: every per_thread scale of the real
// kernel equals it, two roundings match only 70-75 %).
TS_HD inline float thread_scale(float amax) {
#if defined(__CUDA_ARCH__)
  return __fmaf_rn(amax, 1.0f / 127.0f, 1e-7f);
#else
  return std::fma(amax, 1.0f / 127.0f, 1e-7f);
#endif
}
// One code of either recipe from x and its group's multiplier.
TS_HD inline int8_t int8_code(bool per_thread, float x, float mult) {
  return per_thread ? num::int8_round_half_away_trunc(x * mult) : num::int8_rni_sat(x * mult);
}

}  // namespace ts::sage2
