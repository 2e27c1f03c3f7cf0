#include "reference/sage2_presets.hpp"

namespace ts {
namespace {

Sage2Config knobs(sage2::Granularity g, int64_t blkq, int64_t warpq, int64_t blkk,
                   int64_t warpk, int64_t key_block, Sage2Accum accum, float scale_max) {
  Sage2Config c;
  c.granularity = g;
  c.blkq = blkq;
  c.warpq = warpq;
  c.blkk = blkk;
  c.warpk = warpk;
  c.key_block = key_block;
  c.accum = accum;
  c.scale_max = scale_max;
  return c;
}

}  // namespace

const std::vector<Sage2Preset>& sage2_presets() {
  using G = sage2::Granularity;
  using A = Sage2Accum;
  // The table (docs/emulation.md "sage2"). Columns: granularity, BLKQ, WARPQ, BLKK,
  // WARPK, online-softmax key block, accumulation, FP8 V scale_max. 2.25
  // keeps the fp16 partial sums of 64 products below 65504.
  // sage2 presets table: begin
  static const std::vector<Sage2Preset> table = [] {
    std::vector<Sage2Preset> t = {
        {"sm121", "CUDA per_warp kernel, fp32+fp16 (GB10, the seed's run)",
         knobs(G::per_warp, 128, 32, 64, 64, 64, A::fp32_fp16, 2.25f), "sageattn_qk_int8_pv_fp8_cuda", 1},
        {"sm120", "CUDA per_warp kernel, fp32+fp16 (RTX 50xx)",
         knobs(G::per_warp, 128, 32, 64, 64, 64, A::fp32_fp16, 2.25f), "sageattn_qk_int8_pv_fp8_cuda", 1},
        {"sm89", "Triton per_thread quantisers, fp32+fp16 (Ada)",
         knobs(G::per_thread, 128, 32, 64, 64, 64, A::fp32_fp16, 2.25f), "sageattn_qk_int8_pv_fp8_cuda", 1},
        {"sm90", "Triton per_thread quantisers, sm90 geometry, fp32+fp32 (Hopper)",
         knobs(G::per_thread, 64, 16, 128, 128, 128, A::fp32_fp32, 448.0f),
         "sageattn_qk_int8_pv_fp8_cuda_sm90", 128},
    };
    // sage2 presets table: end
    for (auto& row : t) row.config.preset = row.name;
    return t;
  }();
  return table;
}

const Sage2Preset& sage2_default_preset() { return sage2_presets().front(); }

std::string sage2_preset_names(const std::string& sep) {
  std::string s;
  for (const auto& p : sage2_presets()) s += (s.empty() ? "" : sep) + p.name;
  return s;
}

std::string sage2_default_spec() { return std::string("sage2:preset=") + sage2_default_preset().name; }

}  // namespace ts
