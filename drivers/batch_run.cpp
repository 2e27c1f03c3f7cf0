#include "drivers/batch_run.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "core/error.hpp"
#include "core/write_file.hpp"
#include "drivers/gate_on_fixture.hpp"
#include "gates/gate_file.hpp"
#include "gates/json_input.hpp"

namespace ts {
namespace {

namespace fs = std::filesystem;

std::optional<double> number_or_text(const nlohmann::json& j) {
  if (j.is_null()) return std::nullopt;
  if (j.is_number()) return j.get<double>();
  const std::string s = j.get<std::string>();
  if (s == "NaN") return std::nan("");
  if (s == "Infinity") return HUGE_VAL;
  if (s == "-Infinity") return -HUGE_VAL;
  throw InputError("expected a number, got \"" + s + "\"");
}

Interval interval_from(const nlohmann::json& j) {
  Interval i;
  i.point = j.at("point").get<double>();
  i.lower = j.at("lower").get<double>();
  i.upper = j.at("upper").get<double>();
  i.confidence = j.at("confidence").get<double>();
  i.resamples = j.at("resamples").get<int>();
  i.seed = j.at("seed").get<uint64_t>();
  i.samples = j.at("samples").get<int64_t>();
  i.method = j.at("method").get<std::string>();
  return i;
}

WorstGroup worst_from(const nlohmann::json& j) {
  WorstGroup w;
  w.kind = j.at("kind").get<std::string>();
  w.index = j.at("index").get<int64_t>();
  if (j.contains("tokens")) {
    w.first_token = j["tokens"].at(0).get<int64_t>();
    w.last_token = j["tokens"].at(1).get<int64_t>();
  }
  w.rel_l2 = number_or_text(j.at("rel_l2"));
  w.gain = number_or_text(j.at("gain"));
  return w;
}

RuleStatus status_from(const std::string& s) {
  for (RuleStatus v : {RuleStatus::pass, RuleStatus::fail, RuleStatus::missing, RuleStatus::inconclusive})
    if (s == rule_status_name(v)) return v;
  throw InputError("unknown rule status '" + s + "'");
}

// A record carries what GateRun::to_json() writes plus the one field it
// leaves out (a rule's resolved limit, which the HTML plots draw), so that a
// run read back renders exactly as the run it was.
nlohmann::json run_record(const GateRun& run) {
  nlohmann::json j = run.to_json();
  nlohmann::json limits = nlohmann::json::array();
  for (const auto& c : run.candidates) {
    nlohmann::json l = nlohmann::json::array();
    for (const auto& o : c.outcomes) l.push_back(o.limit ? nlohmann::json(*o.limit) : nlohmann::json());
    limits.push_back(l);
  }
  j["limits"] = limits;
  return j;
}

GateRun run_from_record(const nlohmann::json& j, const std::string& where) {
  GateRun run;
  nlohmann::json g = j.at("gate");
  const std::string source = g.at("source").get<std::string>();
  g.erase("source");
  run.gate = parse_gate(g.dump(), where + " (gate)");
  run.gate.source = source;
  run.mode = j.at("mode").get<std::string>();
  run.input = j.at("input").get<std::string>();
  run.baseline = j.at("baseline").get<std::string>();
  run.context = j.at("context");
  if (j.contains("columns")) run.columns = j["columns"].get<std::vector<std::string>>();
  const nlohmann::json& limits = j.at("limits");
  size_t ci = 0;
  for (const auto& cj : j.at("candidates")) {
    CandidateVerdict c;
    c.candidate = cj.at("candidate").get<std::string>();
    c.verdict = verdict_from_name(cj.at("verdict").get<std::string>(), "candidates[" + std::to_string(ci) + "]");
    size_t oi = 0;
    for (const auto& oj : cj.at("rules")) {
      RuleOutcome o;
      o.id = oj.at("id").get<std::string>();
      o.metric = oj.at("metric").get<std::string>();
      o.against = oj.at("against").get<std::string>();
      o.tensor = oj.at("tensor").get<std::string>();
      o.status = status_from(oj.at("status").get<std::string>());
      o.bound = oj.at("bound").get<std::string>();
      o.message = oj.at("message").get<std::string>();
      o.builtin = oj.at("builtin").get<bool>();
      o.optional = oj.at("optional").get<bool>();
      o.figure = number_or_text(oj.at("figure"));
      if (oj.contains("interval")) o.interval = interval_from(oj["interval"]);
      if (oj.contains("worst")) o.worst = worst_from(oj["worst"]);
      const auto& l = limits.at(ci).at(oi);
      if (!l.is_null()) o.limit = l.get<double>();
      c.outcomes.push_back(std::move(o));
      ++oi;
    }
    c.notes = cj.at("notes").get<std::vector<std::string>>();
    if (cj.contains("error")) c.error = cj["error"].get<std::string>();
    if (cj.contains("repro")) c.repro = cj["repro"].get<std::string>();
    if (!cj.at("clock").is_null()) c.clock = cj["clock"].get<std::string>();
    if (cj.contains("shown")) c.shown = cj["shown"].get<std::vector<std::string>>();
    c.details = cj.at("details");
    run.candidates.push_back(std::move(c));
    ++ci;
  }
  return run;
}

bool same_group(const BatchCase& a, const BatchCase& b) {
  return a.fixture == b.fixture && a.gate == b.gate && a.baseline == b.baseline;
}

// Where two runs of a plan may differ (docs/batch.md "Determinism").
void drop_volatile(nlohmann::json& j) { j.erase("execution"); }

}  // namespace

std::string host_name() {
  char b[256] = {0};
  if (::gethostname(b, sizeof b - 1) != 0) return "unknown";
  return b;
}

nlohmann::json BatchRecord::to_json() const {
  nlohmann::json j{{"schema", kBatchResultSchema}, {"id", id}, {"key", key}, {"digest", digest}};
  if (run) j["run"] = run_record(*run);
  else j["not_judged"] = reason;
  j["execution"] = execution;
  return j;
}

BatchRecord BatchRecord::from_json(const nlohmann::json& j, const std::string& where) {
  try {
    if (j.at("schema") != kBatchResultSchema)
      throw InputError("schema is not " + std::string(kBatchResultSchema));
    BatchRecord r;
    r.id = j.at("id").get<std::string>();
    r.key = j.at("key").get<std::string>();
    r.digest = j.at("digest").get<std::string>();
    if (j.contains("run")) r.run = run_from_record(j["run"], where);
    else r.reason = j.at("not_judged").get<std::string>();
    if (j.contains("execution")) r.execution = j["execution"];
    return r;
  } catch (const InputError& e) {
    throw InputError(where + ": " + e.what());
  } catch (const std::exception& e) {
    throw InputError(where + ": not a batch result record (" + e.what() + ")");
  }
}

void check_plan(const BatchPlan& plan) {
  std::vector<std::pair<const BatchCase*, std::vector<std::string>>> groups;
  for (const BatchCase& c : plan.cases) {
    auto it = std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return same_group(*g.first, c); });
    if (it == groups.end()) groups.push_back({&c, {c.candidate}});
    else it->second.push_back(c.candidate);
  }
  for (const auto& [first, candidates] : groups) {
    GateRunOptions opts = plan.options;
    opts.gate_arg = first->gate;
    opts.check_only = true;
    try {
      run_gate_on_fixture(load_gate(first->gate), first->fixture, first->baseline, candidates, opts);
    } catch (const InputError& e) {
      throw InputError(plan.path + ": case " + first->id + " (fixture " + first->fixture + ", gate " + first->gate +
                       ", baseline " + first->baseline + "): " + e.what());
    }
  }
}

std::vector<BatchRecord> judge_unit(const BatchPlan& plan, const WorkUnit& unit, const nlohmann::json& execution) {
  std::vector<BatchRecord> out;
  if (unit.cases.empty()) return out;
  const BatchCase& first = plan.cases[unit.cases.front()];
  std::vector<std::string> candidates;
  for (size_t i : unit.cases) {
    if (!same_group(plan.cases[i], first)) throw InternalError("a work unit mixes fixtures, gates or baselines");
    candidates.push_back(plan.cases[i].candidate);
  }
  GateRunOptions opts = plan.options;
  opts.gate_arg = first.gate;
  const auto t0 = std::chrono::steady_clock::now();
  std::string reason;
  std::optional<GateRun> run;
  try {
    // When drivers/ has run_cases(gate, cases, options), this call becomes it.
    run = run_gate_on_fixture(load_gate(first.gate), first.fixture, first.baseline, candidates, opts);
    if (run->candidates.size() != candidates.size())
      throw InternalError("the gate driver returned " + std::to_string(run->candidates.size()) + " verdicts for " +
                          std::to_string(candidates.size()) + " candidates");
  } catch (const InputError& e) {
    reason = std::string("bad input: ") + e.what();
  } catch (const std::exception& e) {
    reason = std::string("internal error: ") + e.what();
  }
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  for (size_t k = 0; k < unit.cases.size(); ++k) {
    const BatchCase& c = plan.cases[unit.cases[k]];
    BatchRecord r;
    r.id = c.id;
    r.key = c.key;
    r.digest = plan.digest;
    r.execution = execution;
    r.execution["host"] = host_name();
    r.execution["pid"] = static_cast<int64_t>(::getpid());
    r.execution["unit_wall_s"] = wall;
    r.execution["unit_cases"] = unit.cases.size();
    if (run) {
      GateRun one = *run;
      one.candidates = {run->candidates[k]};
      r.run = std::move(one);
    } else {
      r.reason = reason;
    }
    // The record as it reads back from its file: a unit judged in this process (an MPI rank's
    // own share) then reports exactly what a worker's record or a shard's gives.
    try {
      out.push_back(BatchRecord::from_json(r.to_json(), "case " + c.id));
    } catch (const InputError& e) {
      throw InternalError(std::string("a batch record does not read back: ") + e.what());
    }
  }
  return out;
}

void write_result(const std::string& dir, const BatchRecord& r) {
  write_file_atomic((fs::path(dir) / (r.id + ".json")).string(), r.to_json().dump(1) + "\n");
}

std::optional<BatchRecord> read_result(const std::string& dir, const BatchPlan& plan, const BatchCase& c) {
  const fs::path p = fs::path(dir) / (c.id + ".json");
  std::error_code ec;
  if (!fs::is_regular_file(p, ec)) return std::nullopt;
  nlohmann::json j;
  try {
    j = json_input::read_file(p.string());
  } catch (const InputError&) {
    return std::nullopt;  // a record half-written by a process that died is no record
  }
  BatchRecord r = BatchRecord::from_json(j, p.string());
  if (r.digest != plan.digest || r.key != c.key) return std::nullopt;
  return r;
}

std::set<std::string> changed_since_judged(const std::string& dir, const BatchPlan& plan) {
  std::set<std::string> out;
  for (const auto& c : plan.cases) {
    const fs::path p = fs::path(dir) / (c.id + ".json");
    std::error_code ec;
    if (!fs::is_regular_file(p, ec)) continue;
    try {
      const nlohmann::json j = json_input::read_file(p.string());
      if (j.value("digest", "") == plan.digest && j.value("key", "") != c.key) out.insert(c.id);
    } catch (const std::exception&) {
      // a record half-written by a process that died is no record
    }
  }
  return out;
}

std::map<std::string, BatchRecord> read_results(const std::string& dir, const BatchPlan& plan) {
  std::map<std::string, BatchRecord> out;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return out;
  std::map<std::string, const BatchCase*> by_id;
  for (const auto& c : plan.cases) by_id[c.id] = &c;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const fs::path p = e.path();
    if (p.extension() != ".json" || p.filename().string().front() == '.') continue;
    const auto it = by_id.find(p.stem().string());
    if (it == by_id.end()) continue;
    nlohmann::json j;
    try {
      j = json_input::read_file(p.string());
    } catch (const InputError&) {
      continue;  // a record half-written by a process that died is no record
    }
    BatchRecord r = BatchRecord::from_json(j, p.string());
    if (r.digest != plan.digest || r.key != it->second->key) continue;
    out.emplace(r.id, std::move(r));
  }
  return out;
}

BatchReport assemble_report(const BatchPlan& plan, const std::map<std::string, BatchRecord>& results,
                            const std::map<std::string, std::string>& missing_reasons, nlohmann::json execution) {
  BatchReport rep;
  rep.plan = plan;
  rep.execution = std::move(execution);
  nlohmann::json per_case = nlohmann::json::object();
  // Cases are in id order already (the expansion's): a run per group, in the
  // order of its first judged case.
  std::map<std::string, size_t> run_of;
  for (const auto& c : plan.cases) {
    const auto it = results.find(c.id);
    if (it != results.end()) per_case[c.id] = it->second.execution;
    if (it == results.end() || !it->second.run) {
      std::string why = it != results.end() ? it->second.reason : "no result";
      if (it == results.end()) {
        const auto m = missing_reasons.find(c.id);
        if (m != missing_reasons.end()) why = m->second;
      }
      rep.not_judged.push_back({c, why});
      continue;
    }
    const GateRun& one = *it->second.run;
    const std::string g = c.fixture + "|" + c.gate + "|" + c.baseline;
    auto r = run_of.find(g);
    if (r == run_of.end()) {
      r = run_of.emplace(g, rep.runs.size()).first;
      GateRun head = one;
      head.candidates.clear();
      rep.runs.push_back(std::move(head));
    }
    rep.runs[r->second].candidates.push_back(one.candidates.at(0));
  }
  rep.execution["cases"] = per_case;
  return rep;
}

int BatchReport::exit_code() const {
  // Bad input found while running is bad input still (gate would exit 2 on it).
  for (const auto& n : not_judged)
    if (n.reason.rfind("bad input: ", 0) == 0) return kBadInput;
  if (!not_judged.empty()) return kGateFailed;
  for (const auto& r : runs)
    if (r.exit_code() != 0) return kGateFailed;
  return kPass;
}

nlohmann::json normalised_report(const nlohmann::json& report) {
  nlohmann::json j = report;
  drop_volatile(j);
  return j;
}

nlohmann::json ShardFile::to_json() const {
  nlohmann::json res = nlohmann::json::array();
  for (const auto& [id, r] : results) res.push_back(r.to_json());
  return {{"schema", kBatchShardSchema}, {"shard", {{"index", index}, {"count", count}}},
          {"host", host},               {"plan", plan.to_json()},
          {"assigned", assigned},       {"results", res}};
}

ShardFile read_shard(const std::string& path) {
  const nlohmann::json j = json_input::read_file(path);
  ShardFile s;
  try {
    if (!j.is_object() || j.value("schema", "") != kBatchShardSchema)
      throw InputError("schema is not " + std::string(kBatchShardSchema));
    s.plan = BatchPlan::from_json(j.at("plan"), path);
    s.index = j.at("shard").at("index").get<int>();
    s.count = j.at("shard").at("count").get<int>();
    s.host = j.value("host", "");
    s.assigned = j.at("assigned").get<std::vector<std::string>>();
    for (const auto& r : j.at("results")) {
      BatchRecord c = BatchRecord::from_json(r, path);
      s.results.emplace(c.id, std::move(c));
    }
  } catch (const InputError& e) {
    throw InputError(path + ": " + e.what());
  } catch (const std::exception& e) {
    throw InputError(path + ": not a batch shard file (" + e.what() + ")");
  }
  return s;
}

}  // namespace ts
