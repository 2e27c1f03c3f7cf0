#include "drivers/tables.hpp"

#include "core/block_stage_table.hpp"
#include "core/config_json.hpp"
#include "core/timing_defaults.hpp"
#include "fixtures/fixture.hpp"
#include "gates/gate_file.hpp"
#include "gates/metrics.hpp"
#include "gates/report.hpp"
#include "gates/verdict.hpp"
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
      {"clocks", {kClockDevice, kClockHost}},
      {"timing", {{"gate", {{"pairs", kGateTiming.pairs}, {"warmup", kGateTiming.warmup},
                            {"rotate", kGateTiming.rotate}}},
                  {"replay", {{"reps", kReplayTiming.reps}, {"warmup", kReplayTiming.warmup},
                              {"rotate", kReplayTiming.rotate}}}}},
      {"builtin_gates", builtin_gate_names()},
      {"metrics", gate_metric_names()},
      {"terminal", {{"default_width", kDefaultTerminalWidth}, {"min_width", kMinTerminalWidth}}},
      {"verdicts", verdicts},
  };
}

}  // namespace ts
