#include "drivers/tables.hpp"

#include "core/block_stage_table.hpp"
#include "core/config_json.hpp"
#include "core/timing_defaults.hpp"
#include "core/tensor.hpp"
#include "fixtures/digest.hpp"
#include "fixtures/fixture.hpp"
#include "fixtures/identity.hpp"
#include "gates/gate_file.hpp"
#include "gates/metrics.hpp"
#include "core/terminal_defaults.hpp"
#include "gates/verdict.hpp"
#include "reference/attention_sol.hpp"
#include "reference/sage2_presets.hpp"

namespace ts {

namespace {

// A stage dimension as {key of /config (or "tokens": the segments' total, or
// null: a constant), factor}: enough for any reader to resolve a shape.
nlohmann::json dim_json(StageDim d) {
  switch (d) {
    case StageDim::tokens: return {{"key", "tokens"}, {"factor", 1}};
    case StageDim::hidden: return {{"key", "hidden"}, {"factor", 1}};
    case StageDim::three: return {{"key", nullptr}, {"factor", 3}};
    case StageDim::heads: return {{"key", "heads"}, {"factor", 1}};
    case StageDim::head_dim: return {{"key", "head_dim"}, {"factor", 1}};
    case StageDim::ffn: return {{"key", "ffn_hidden"}, {"factor", 1}};
    case StageDim::ffn2: return {{"key", "ffn_hidden"}, {"factor", 2}};
  }
  return nullptr;
}

// What a fixture's datasets and attributes are named and how they are stored, as C++
// writes and checks them (docs/fixture-format.md): the content digest, the element types,
// the attributes of an output and of its timings.
nlohmann::json fixture_format_json() {
  nlohmann::json dtypes = nlohmann::json::array();
  for (DType t : kDTypes)
    dtypes.push_back({{"name", dtype_name(t)},
                      {"bytes", dtype_bytes(t)},
                      {"float", t == DType::bf16 || t == DType::f16 || t == DType::f32 || t == DType::f64}});
  // An output's attributes as output_attrs writes them: those always written, and those
  // written when known (wall_ms).
  nlohmann::json required = nlohmann::json::array(), optional = nlohmann::json::array();
  const nlohmann::json bare = output_attrs("b", nlohmann::json::object(), std::nullopt);
  for (const auto& [k, v] : bare.items()) required.push_back(k);
  const nlohmann::json timed = output_attrs("b", nlohmann::json::object(), 1.0);
  for (const auto& [k, v] : timed.items())
    if (!bare.contains(k)) optional.push_back(k);
  nlohmann::json reserved = nlohmann::json::array();
  for (const auto& r : kReservedOutputNames) reserved.push_back({{"name", r.name}, {"meaning", r.meaning}});
  return {
      {"reserved_output_names", reserved},
      {"digest", {{"scheme", digest::kScheme}, {"leaf_bytes", digest::kLeafBytes}, {"attribute", digest::kAttr}}},
      // An output's own file, and the attribute naming the inputs it was computed from.
      {"output_schema", kOutputSchema},
      {"inputs_identity_attribute", kInputsAttr},
      {"dtypes", dtypes},
      // bfloat16 (and float16 where HDF5's half type is not used) are stored as their uint16
      // bits with this attribute naming the type (fixtures/h5_detail.cpp).
      {"dtype_attribute", "dtype"},
      {"uint16_dtypes", nlohmann::json::array({dtype_name(DType::bf16), dtype_name(DType::f16)})},
      {"output_attrs", {{"required", required}, {"optional", optional}}},
      {"timing_attrs", {{"clock", kClockAttr}, {"timing_run", kTimingRunAttr}, {"timing_runs", kTimingRunsAttr}}},
  };
}

}  // namespace

nlohmann::json export_tables() {
  nlohmann::json stages = nlohmann::json::array();
  for (const auto& s : block_stage_table()) {
    nlohmann::json shape = nlohmann::json::array(), inputs = nlohmann::json::array();
    for (auto d : s.shape) shape.push_back(dim_json(d));
    for (auto in : s.inputs) inputs.push_back(stage_name(in));
    stages.push_back({{"name", s.name}, {"shape", shape}, {"inputs", inputs},
                      {"elementwise", s.elementwise}, {"floor", s.floor}, {"growth", s.growth},
                      {"profile_component", s.profile_component}});
  }
  nlohmann::json presets = nlohmann::json::array();
  for (const auto& p : sage2_presets()) {
    nlohmann::json knobs = sage2_params(p.config);
    knobs.erase("backend");
    knobs.erase("preset");
    presets.push_back({{"name", p.name}, {"kernel", p.kernel}, {"config", knobs},
                       {"real_function", p.real_function}, {"real_v_pad", p.real_v_pad}});
  }
  nlohmann::json sizes = nlohmann::json::array();
  for (const auto& n : preset_names()) sizes.push_back({{"name", n}, {"config", config_to_json(preset_config(n))}});
  nlohmann::json verdicts = nlohmann::json::array();
  for (const auto& v : verdict_table()) verdicts.push_back(v.name);
  const BlockConfig defaults;
  return {
      {"version", TOUCHSTONE_VERSION},
      {"fixture_schema", kFixtureSchema},
      {"gate_schema", kGateSchema},
      {"stages", stages},
      {"sage2_presets", presets},
      {"sage2_default_preset", sage2_default_preset().name},
      {"fixture_presets", sizes},
      {"config", {{"required", config_required_keys()},
                  {"defaults", {{"token_order", defaults.token_order},
                                {"rms_eps", defaults.rms_eps},
                                {"rope_theta", defaults.rope_theta},
                                {"qkv_layout", defaults.qkv_layout}}}}},
      {"fixture_format", fixture_format_json()},
      {"clocks", {kClockDevice, kClockHost}},
      {"clock_names", {{"device", kClockDevice}, {"host", kClockHost}}},
      {"timing", {{"gate", {{"pairs", kGateTiming.pairs}, {"warmup", kGateTiming.warmup},
                            {"rotate", kGateTiming.rotate}}},
                  {"replay", {{"reps", kReplayTiming.reps}, {"warmup", kReplayTiming.warmup},
                              {"rotate", kReplayTiming.rotate}}}}},
      {"builtin_gates", builtin_gate_names()},
      {"metrics", gate_metric_names()},
      {"terminal", {{"default_width", kDefaultTerminalWidth}, {"min_width", kMinTerminalWidth}}},
      {"verdicts", verdicts},
      {"sol", {{"routing_format", kSolRoutingFormat},
               {"block_q", SolConfig{}.block_q},
               {"block_k", SolConfig{}.block_k},
               {"block_k_max", kSolMaxBlockK},
               {"routing_attr_max_video_blocks", kSolRoutingAttrMaxVideoBlocks}}},
      {"mistrust", {{"ceiling_tflops", kMistrustCeilingTflops}}},
  };
}

}  // namespace ts
