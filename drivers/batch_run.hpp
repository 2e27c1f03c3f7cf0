#pragma once
// Running a plan's cases and assembling one report from their results
// (docs/batch.md). Every way of running a plan (one process, local workers,
// MPI ranks, Slurm array shards) writes the same per-case result records,
// and every report is assembled from records alone, sorted by case id: that
// is why the merged report of N shards is the single process's report.
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "drivers/batch_plan.hpp"
#include "gates/verdict.hpp"

namespace ts {

inline constexpr const char* kBatchResultSchema = "touchstone.batch-result/1";
inline constexpr const char* kBatchShardSchema = "touchstone.batch-shard/1";
inline constexpr const char* kBatchReportSchema = "touchstone.batch-report/1";

// One case's outcome: its GateRun of one candidate (as `gate` makes it), or
// why it was not judged.
struct BatchRecord {
  std::string id, key, digest;
  std::optional<GateRun> run;  // judged
  std::string reason;          // not judged: why
  // Volatile (docs/batch.md "Determinism"): wall time, host, worker, pid.
  nlohmann::json execution = nlohmann::json::object();
  nlohmann::json to_json() const;
  static BatchRecord from_json(const nlohmann::json& j, const std::string& where);
};

// THE one place batch runs the gate driver: the unit's cases (one fixture,
// gate, baseline) judged in one call, so the fixture is loaded and exact and
// the baseline run once for them. A call that throws leaves every case of the
// unit not judged, with the error as reason.
std::vector<BatchRecord> judge_unit(const BatchPlan& plan, const WorkUnit& unit, const nlohmann::json& execution);

// Before any worker starts: every group of the plan (fixture, gate, baseline
// and its candidates) checked as `gate` checks it before work (specs, stored
// outputs, the fixture, the slow-run guard); the first problem is an
// InputError naming the plan's case, not a case left not judged.
void check_plan(const BatchPlan& plan);

// Results as files DIR/<id>.json (written atomically as each unit finishes),
// so a run that dies keeps what it judged and --resume / merge can use it.
void write_result(const std::string& dir, const BatchRecord& r);
// The records in DIR that belong to the plan (same digest, known id and key);
// others are ignored. A missing folder is no records.
std::map<std::string, BatchRecord> read_results(const std::string& dir, const BatchPlan& plan);
// The cases whose record in DIR is of this plan but not of its key: judged
// before their fixture, one of its output files or their gate file changed,
// so --resume judges them again.
std::set<std::string> changed_since_judged(const std::string& dir, const BatchPlan& plan);
// One case's record in DIR, when there is one that belongs to the plan.
std::optional<BatchRecord> read_result(const std::string& dir, const BatchPlan& plan, const BatchCase& c);

struct NotJudged {
  BatchCase c;
  std::string reason;
};

struct BatchReport {
  BatchPlan plan;
  std::vector<GateRun> runs;  // one per (fixture, gate, baseline), in case order
  std::vector<NotJudged> not_judged;
  nlohmann::json execution = nlohmann::json::object();  // volatile: mode, hosts, per-case wall times
  int exit_code() const;  // 0 when every case was judged ACCEPT, else 1
};  // its JSON, JUnit, Markdown, HTML and terminal text: report/batch_report.hpp

// Assembles the report from records (any order, any mix of sources). A case
// without a record is not judged with `missing_reasons[id]`, else "no result".
BatchReport assemble_report(const BatchPlan& plan, const std::map<std::string, BatchRecord>& results,
                            const std::map<std::string, std::string>& missing_reasons,
                            nlohmann::json execution);

// The same report with its volatile fields removed (docs/batch.md): what two
// runs of one plan must agree on byte for byte.
nlohmann::json normalised_report(const nlohmann::json& report);

// Shard files (--shard I/N): the plan's cases, which ones this shard owned,
// and its records.
struct ShardFile {
  BatchPlan plan;
  int index = 0, count = 1;
  std::vector<std::string> assigned;  // case ids
  std::map<std::string, BatchRecord> results;
  std::string host;
  nlohmann::json to_json() const;
};
ShardFile read_shard(const std::string& path);

// This machine's name, for execution records.
std::string host_name();

}  // namespace ts
