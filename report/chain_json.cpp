// The JSON of `touchstone chain` and `touchstone policy` (schema touchstone.chain/1).
#include <optional>

#include "report/chain_report.hpp"

namespace ts {
namespace {

nlohmann::json opt(const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); }

nlohmann::json cell_json(const ChainCell& c) {
  return {{"block", c.block},
          {"step", c.step},
          {"spec", c.spec},
          {"dense", c.dense},
          {"in_error", c.in_error},
          {"own", c.own},
          {"carried", c.carried},
          {"growth", opt(c.growth)},
          {"vs_baseline", c.vs_baseline.to_json()},
          {"vs_exact", c.vs_exact.to_json()},
          {"attention_ms", c.attention_ms},
          {"clock", c.clock},
          {"density", opt(c.density)}};
}

}  // namespace

nlohmann::json chain_json(const ChainJudgement& j) {
  const ChainRun& run = j.chain;
  nlohmann::json base = nlohmann::json::array();
  for (size_t i = 0; i < run.baseline.size(); ++i) {
    const BaselineCell& b = run.baseline[i];
    base.push_back({{"block", static_cast<int>(i) % run.set.blocks},
                    {"step", static_cast<int>(i) / run.set.blocks},
                    {"vs_exact", b.vs_exact.to_json()},
                    {"attention_ms", b.attention_ms},
                    {"clock", b.clock},
                    {"matches_fixture", b.matches_fixture}});
  }
  nlohmann::json chains = nlohmann::json::array();
  for (size_t i = 0; i < run.chains.size(); ++i) {
    const ChainResult& ch = run.chains[i];
    nlohmann::json cells = nlohmann::json::array();
    for (const auto& c : ch.cells) cells.push_back(cell_json(c));
    chains.push_back({{"schedule", ch.schedule.text},
                      {"cells", cells},
                      {"error", ch.error},
                      {"attention_ms", ch.attention_ms()},
                      {"time_is_real", j.time_is_real[i]},
                      {"time_note", j.time_note(i)},
                      {"work", ch.work()},
                      {"verdict", j.cases.run.candidates[i].to_json()}});
  }
  nlohmann::json out = {
      {"schema", "touchstone.chain/1"},
      {"set", {{"label", run.set.label}, {"blocks", run.set.blocks}, {"steps", run.set.steps},
               {"dt", opt(run.set.dt)},
               {"files", run.set.files}}},
      {"baseline", run.opts.baseline},
      {"exact", run.opts.exact},
      {"linear", run.opts.linear},
      {"recipe", run.opts.recipe},
      {"block_backend", run.opts.block_backend},
      {"gate", j.cases.run.gate.source},
      {"baseline_cells", base},
      {"baseline_attention_ms", run.baseline_attention_ms()},
      {"chains", chains},
      {"wall_s", run.wall_s},
      {"block_runs", run.block_runs},
      {"exit_code", j.exit_code()}};
  nlohmann::json fr = nlohmann::json::array();
  for (size_t i : j.frontier) fr.push_back(run.chains[i].schedule.text);
  out["frontier"] = fr;
  out["chosen"] = j.chosen ? nlohmann::json(run.chains[*j.chosen].schedule.text) : nlohmann::json(nullptr);
  return out;
}

}  // namespace ts
