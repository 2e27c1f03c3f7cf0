#pragma once
// CPU emulation of SageAttention 2.2.0 (docs/emulation.md "sage2"): INT8 Q/K with K smoothing, exp2 online softmax per key block with
// the 8.807 offset, FP8 P and V, and the kernels' accumulation modes.
#include <memory>
#include <string>
#include <vector>

#include "reference/attention_problem.hpp"
#include "reference/backend_params.hpp"
#include "reference/sage2_quant.hpp"

namespace ts {

enum class Sage2Accum { fp32, fp32_fp32, fp32_fp16 };

// A configuration starts from a preset (sage2_preset(), the table in
// reference/sage2_presets.cpp); a default-constructed one is not runnable.
struct Sage2Config {
  std::string preset;
  sage2::Granularity granularity = sage2::Granularity::per_warp;
  int64_t blkq = 0, warpq = 0, blkk = 0, warpk = 0;
  int64_t key_block = 0;  // online-softmax step: 64 or 128 keys, as the preset's kernel
  Sage2Accum accum = Sage2Accum::fp32_fp16;
  float scale_max = 0;
  bool smooth_k = true;
  // Identity switches (tests): with all four off and accum=fp32 the emulation
  // is a float32 dense attention.
  bool quant_qk = true, quant_v = true, round_p = true, round_out = true;
  // Triage dump: codes, scales, km, and the FP8-rounded P of one query tile.
  bool dump = false;
  int64_t dump_qblock = 0, dump_head = 0;
};

// The preset's defaults (reference/sage2_presets.hpp); InputError naming the
// known presets for any other name.
Sage2Config sage2_preset(const std::string& preset);
const char* sage2_accum_name(Sage2Accum a);

// What the quantisers make of the inputs (host side, O(S·H·D)); the O(S²)
// attention runs on it, here or on the device (reference/cuda/attention_sage2).
struct Sage2Prepared {
  int64_t H = 0, S = 0, D = 0;
  sage2::HeadMajor q_raw, k_raw, v_raw;  // k_raw is K − km when smoothing
  std::vector<float> km;
  sage2::Int8Tensor q8, k8;              // when quant_qk
  sage2::Fp8V v8;                        // when quant_v
};
Sage2Prepared sage2_prepare(const AttentionProblem& problem, const Sage2Config& cfg);
// InputError for shapes or knobs the emulation cannot run.
void sage2_check(const AttentionProblem& problem, const Sage2Config& cfg);
// The full parameter set, for the outputs' `params` attribute.
nlohmann::json sage2_params(const Sage2Config& cfg);
// f32(softmax_scale) * f32(log2 e), as the kernel receives it.
float sage2_sm_scale(double softmax_scale);

// Output [S, H, D] bf16 (float32 when round_out is off). Intermediates when
// cfg.dump: q_int8/k_int8 [S,H,D] int8, q_scale/k_scale [H, n] float32 in the
// kernel's padded layout, km [H,D], v_fp8 [S,H,D] uint8 codes, v_scale [H,D],
// p_fp8 [rows, S] (the P8 values fed to P·V for query tile dump_qblock of
// head dump_head, tile = blkq tokens; each key's value at its own key block).
AttentionResult sage2_attention(const AttentionProblem& problem, const Sage2Config& cfg);

// kind "sage2": preset, granularity, blkq, warpq, blkk, warpk, key_block,
// accum, scale_max, smooth_k, quant_qk, quant_v, round_p, round_out, dump,
// dump_qblock, dump_head.
std::unique_ptr<AttentionBackend> make_sage2_backend(BackendParams& p);
// The knobs of kind "sage2" (leaves p.finish() to the caller); `name` gets the
// output name, sage2_<preset> plus every knob that differs from the preset.
Sage2Config sage2_config_from(BackendParams& p, std::string* name);

}  // namespace ts
