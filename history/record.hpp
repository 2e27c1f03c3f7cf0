#pragma once
// One finished GateRun as the rows the results store appends (docs/history.md "Schema"): a run,
// one case per candidate, each rule's figure and bound, the worst groups of the breakdowns, the
// timing summary. Pure: the store writes these, the tests build them without a database.
#include <chrono>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "gates/verdict.hpp"
#include "history/provenance.hpp"

namespace ts::history {

struct RuleRecord {
  int ordinal = 0;
  std::string id, metric, against, tensor, status, bound, message;
  std::optional<double> figure;  // finite figures only
  std::string figure_text;       // "NaN", "Infinity", "-Infinity" for a figure that is not finite
  std::optional<double> bound_min, bound_max, limit;
  // Which way is worse: "up" (an upper bound), "down" (a lower bound), "away" (both: away from
  // the middle of the range). Decides whether a change is a regression.
  std::string worse = "up";
  std::optional<double> interval_lower, interval_upper, interval_confidence;
  std::optional<int64_t> interval_samples;
  bool builtin = false, optional = false;
};

// One of the `n` worst groups of a breakdown (details.worst_vs_baseline).
struct GroupRecord {
  std::string against = "baseline", breakdown, metric;  // breakdown: head, query_block, frame, cond
  int rank = 0;                                          // 0 = the worst
  std::optional<int64_t> index;                          // none for cond
  std::optional<double> value;
};

struct CaseRecord {
  int ordinal = 0;
  std::string candidate, backend, verdict, error;
  std::optional<std::string> fixture_identity;  // NULL: the fixture is unsealed
  std::string fixture_path;
  std::optional<std::string> device;
  nlohmann::json versions = nlohmann::json::object();  // torch, kernel, ... where the evidence holds them
  nlohmann::json params = nlohmann::json::object();
  // Timing summary (details.speed).
  std::optional<std::string> clock, timing_run, speed_missing, speed_method;
  std::optional<double> candidate_ms, baseline_ms, speedup, speedup_lower, speedup_upper, speed_confidence;
  std::optional<int64_t> speed_samples;
  nlohmann::json worst = nlohmann::json::object();  // details.worst_vs_baseline as judged
  nlohmann::json shown = nlohmann::json::array();
  nlohmann::json details = nlohmann::json::object();
  std::vector<RuleRecord> rules;
  std::vector<GroupRecord> groups;
};

struct RunRecord {
  Provenance provenance;
  std::string recorded_at;  // ISO 8601 UTC, millisecond resolution
  int64_t recorded_unix_ms = 0;
  std::string gate, gate_source, mode, input, baseline;
  nlohmann::json context = nlohmann::json::object();
  std::vector<CaseRecord> cases;
};

// The fixture a GateRun ran on and its identity: context["fixture_identity"] (a string) when the
// driver filled it, else none (an unsealed fixture, keyed by its path).
RunRecord make_run_record(const GateRun& run, const Provenance& provenance,
                          std::chrono::system_clock::time_point now = std::chrono::system_clock::now());

std::string iso_utc(std::chrono::system_clock::time_point t);  // 2026-12-03T06:21:05.123Z

}  // namespace ts::history
