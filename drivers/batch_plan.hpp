#pragma once
// touchstone.plan/1 (docs/batch.md): many fixtures x gates x baselines x
// candidates as one list of cases, with a cost estimate per case and a
// deterministic split of the work into shards (ranks, array tasks, workers).
// A case here is a small value of batch's own; drivers/batch_run.cpp
// judge_unit() is the one place it meets the gate driver.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "drivers/gate_on_fixture.hpp"

namespace ts {

inline constexpr const char* kPlanSchema = "touchstone.plan/1";

struct BatchCase {
  std::string id;  // "c0007": its place in the expansion, the order of every report
  std::string fixture, gate, baseline, candidate;
  double cost_s = 0;  // this candidate's own runs (batch_plan.cpp estimate_case_s)
  // "fixture|gate|baseline|candidate|options digest|fixture files state|gate text digest", then
  // "|library SIZE MTIME" for a plugin baseline and candidate: what --resume matches a result
  // by, so a fixture, an output file, a gate file or a plugin library written since the record
  // was made judges the case again (fixture_files_state).
  std::string key;
  nlohmann::json to_json() const;
  static BatchCase from_json(const nlohmann::json& j, const std::string& where);
};

// Cases that share fixture, gate and baseline, judged in one driver call so
// that the fixture is loaded and exact and the baseline run once for them.
struct WorkUnit {
  std::vector<size_t> cases;  // indices into BatchPlan::cases, ascending
  double cost_s = 0;          // shared work (load, exact, baseline) + the cases'
};

struct BatchPlan {
  std::string path;    // the plan file
  std::string name;    // "name" of the plan, else the file's stem
  std::string digest;  // of the expanded cases and options: shards and results of other plans are refused
  GateRunOptions options;
  std::vector<BatchCase> cases;
  std::vector<double> group_cost_s;  // per case: the shared work of its group (same for a group)
  nlohmann::json to_json() const;    // what shard files carry (enough for merge)
  static BatchPlan from_json(const nlohmann::json& j, const std::string& where);
};

// Reads, validates and expands a plan. Every error is an InputError of one
// line naming the file and the JSON path ("p.json: $.fixtures[1]: 'x/*.h5'
// matches no file"), raised before any backend runs: unknown keys, bad types,
// globs that match nothing, unreadable fixtures, unknown gates, specs that do
// not parse, stored outputs a fixture lacks, device specs without a device,
// CPU work over the slow-run limit (drivers/run_estimate.hpp) without
// "allow_slow".
BatchPlan load_plan(const std::string& path);

// Work units: the groups (fixture, gate, baseline) in case order; while there
// are fewer units than `workers` the costliest unit of several cases is split
// in two, so that every worker has something to do.
std::vector<WorkUnit> work_units(const BatchPlan& plan, int workers);

// Deterministic greedy LPT: units by cost, largest first (ties: first case),
// each to the least loaded of `n` shards (ties: the lowest index). Returns
// the shard of every unit.
std::vector<int> assign_shards(const std::vector<WorkUnit>& units, int n);

// The --dry-run table: one line per case with its estimate, and the totals.
std::string dry_run_text(const BatchPlan& plan, const std::vector<WorkUnit>& units,
                         const std::vector<int>& shard_of_unit, int shards);
nlohmann::json dry_run_json(const BatchPlan& plan, const std::vector<WorkUnit>& units,
                            const std::vector<int>& shard_of_unit, int shards);

// "1.2 s", "14 min", "3.1 h".
std::string format_duration(double s);

}  // namespace ts
