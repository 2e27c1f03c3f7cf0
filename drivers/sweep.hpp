#pragma once
// touchstone sweep: a routed backend over a list of tau beside the baseline and the exact
// reference, every backend computed in memory (nothing is written into the fixture), with
// the stored real kernels of the fixture as extra rows. With a gate, every row is judged by
// the gate engine (judge(), the same evidence `touchstone gate --fixture` builds), and the
// block's per-stage chain (the production-like block against the exact block, through the
// block driver and the stage comparison) is added when the fixture has a block: the seed's
// table in one command.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "drivers/stage_comparison.hpp"
#include "gates/verdict.hpp"

namespace ts {

struct SweepOptions {
  std::string backend = "sol", precision;
  std::vector<double> taus = {-100, 0, 0.5, 1, 1.3, 2, 3};
  std::vector<std::string> params;  // extra knobs key=value for every row
  std::string baseline;             // "" = the default sage2 spec
  std::string exact = "auto";       // drivers/run_estimate.hpp choose_exact
  // Stored outputs as extra rows: "auto" every /outputs/NAME/attention with
  // /timings/NAME (a kernel run elsewhere and stored with its timings: touchstone's
  // own reference runs store none), "none", or a comma-separated list of names.
  std::string stored = "auto";
  std::string gate;  // "" = no verdicts; a gate file or a built-in name
  // The block's per-stage chain (with a gate): "auto" when the fixture has /block,
  // "off" never.
  std::string block = "auto";
  // The production-like block of that chain: its linears and NVFP4 recipe
  // (reference/block.hpp), against the fp64 block with the exact attention.
  std::string block_linear = "nvfp4", block_recipe = "te";
  // Timed pairs per row for the gate's speed rules, as `gate --pairs`; 0 = none:
  // the sweep's single runs are never speed evidence, so a speed rule on a
  // computed side is then missing (with the reason), while two stored sides
  // are still judged on their /timings.
  int pairs = 0, warmup = 1, rotate = 2;
  uint64_t seed = 1;
  bool allow_nonfinite = false, allow_slow = false;
  bool accuracy_only = false;  // speed rules left out (drivers/run_cases.hpp CaseOptions)
};

struct SweepResult {
  std::string fixture;
  // What `sweep --json` prints but its "block": that holds the stage comparison's JSON, which
  // report/ writes (report/sweep_report.hpp sweep_json adds it).
  nlohmann::json json;
  std::optional<GateRun> run;     // with a gate: one candidate per row
  std::optional<StageComparison> block;
  // With the chain: {"candidate": .., "reference": ..}, the block driver's reports of its two
  // stage sets ({"reused": true} for one the fixture held already).
  nlohmann::json block_runs;
  std::string block_note;         // with a gate and no chain: why (one line)
  int exit_code() const;          // 0 without a gate; else 0 only when every verdict passes
};  // its terminal table, Markdown and HTML: report/sweep_report.hpp

// Bad flags, specs, fixture, gate -> InputError before any backend runs. With a gate,
// a row that fails to run is REJECT with its error and the others are still judged.
SweepResult run_sweep(const std::string& fixture, const SweepOptions& opts);

}  // namespace ts
