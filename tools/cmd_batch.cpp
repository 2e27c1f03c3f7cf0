// touchstone batch: a plan of many fixtures x gates x baselines x candidates
// judged as one report, in local workers, MPI ranks or Slurm array shards
// (docs/batch.md); touchstone batch merge: shards into the report.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/progress.hpp"
#include "drivers/batch_mpi.hpp"
#include "drivers/batch_plan.hpp"
#include "drivers/batch_run.hpp"
#include "drivers/batch_workers.hpp"
#include "fixtures/fixture.hpp"
#include "gates/json_input.hpp"
#include "core/write_file.hpp"
#include "report/batch_report.hpp"
#include "tools/command.hpp"

namespace cmd_batch {

namespace fs = std::filesystem;

struct Reports {
  ts::cli::ReportTarget json, junit, markdown, html;
  void check() const {
    int out = 0;
    for (const auto* t : {&json, &junit, &markdown, &html}) out += t->to_stdout();
    if (out > 1) throw ts::InputError("at most one of --json/--junit/--markdown/--html may go to stdout (-)");
  }
  bool any_stdout() const { return json.to_stdout() || junit.to_stdout() || markdown.to_stdout() || html.to_stdout(); }
  int emit(const ts::BatchReport& r) const {
    if (json.on()) json.emit(ts::batch_json(r));
    if (junit.on()) junit.emit(ts::batch_junit(r));
    if (markdown.on()) markdown.emit(ts::batch_markdown(r));
    if (html.on()) html.emit(ts::batch_html(r));
    // h26 (results store): `--record DB` records each of r.runs here, once per report.
    if (!any_stdout()) std::cout << ts::batch_text(r) << std::flush;
    return r.exit_code();
  }
};

struct Opts {
  std::string plan, shard, output, results;
  int workers = 0;
  bool dry_run = false, resume = false, progress = false;
  double rank_timeout_s = 60;
  Reports reports;
  // The worker's side (hidden): the case ids of one unit.
  std::string worker, worker_digest, worker_label, worker_plan;
};

std::string default_results(const std::string& plan) {
  fs::path p(plan);
  p.replace_extension(".results");
  return p.string();
}

// "I/N" or "slurm" -> (I, N); bad values are one-line errors.
std::pair<int, int> parse_shard(const std::string& s) {
  std::string text = s;
  if (s == "slurm") {
    const char* id = std::getenv("SLURM_ARRAY_TASK_ID");
    const char* count = std::getenv("SLURM_ARRAY_TASK_COUNT");
    if (!id || !count)
      throw ts::InputError("--shard slurm: SLURM_ARRAY_TASK_ID and SLURM_ARRAY_TASK_COUNT must be set (an sbatch --array job)");
    const char* min = std::getenv("SLURM_ARRAY_TASK_MIN");
    const int base = min ? std::atoi(min) : 0;
    text = std::to_string(std::atoi(id) - base) + "/" + count;
  }
  int i = -1, n = -1;
  char extra = 0;
  if (std::sscanf(text.c_str(), "%d/%d%c", &i, &n, &extra) != 2 || n < 1 || i < 0 || i >= n)
    throw ts::InputError("--shard '" + s + "': expected I/N with 0 <= I < N (or slurm)");
  return {i, n};
}

void clear_records(const ts::BatchPlan&, const std::vector<std::string>& ids, const std::set<std::string>& keep,
                   const std::string& dir) {
  std::error_code ec;
  for (const auto& id : ids)
    if (!keep.count(id)) fs::remove(fs::path(dir) / (id + ".json"), ec);
}

std::set<std::string> judged_ids(const ts::BatchPlan& plan, const std::string& dir) {
  std::set<std::string> out;
  for (const auto& [id, r] : ts::read_results(dir, plan))
    if (r.run) out.insert(id);
  return out;
}

// What --resume kept, said above the report: on stdout with the report,
// or on stderr when a report is written to stdout (which then holds only it).
void say_resumed(const Reports& reports, const ts::BatchPlan& plan, const std::set<std::string>& judged,
                 const std::vector<std::string>& ids, const std::string& dir) {
  size_t kept = 0, changed = 0;
  const std::set<std::string> stale = ts::changed_since_judged(dir, plan);
  for (const auto& id : ids) {
    kept += judged.count(id);
    changed += stale.count(id);
  }
  std::ostream& os = reports.any_stdout() ? std::cerr : std::cout;
  os << "touchstone batch: --resume kept " << kept << " of " << ids.size() << " cases (judged already in " << dir
     << "); running the other " << ids.size() - kept;
  if (changed > 0)
    os << " (" << changed << " of them judged before their fixture, its outputs, their gate file or a plugin library changed)";
  os << "\n" << std::flush;
}

nlohmann::json execution_of(const std::string& mode, size_t workers, double wall_s) {
  return {{"mode", mode}, {"host", ts::host_name()}, {"workers", workers}, {"wall_s", wall_s},
          {"finished_at", ts::utc_timestamp()}};
}

int run_worker_mode(const Opts& o) {
  const ts::BatchPlan plan = o.worker_plan.empty()
                                 ? ts::load_plan(o.plan)
                                 : ts::BatchPlan::from_json(ts::json_input::read_file(o.worker_plan), o.worker_plan);
  if (plan.digest != o.worker_digest)
    throw ts::InputError(o.plan + ": the plan changed under the batch (digest " + plan.digest + ", expected " +
                         o.worker_digest + ")");
  std::vector<std::string> ids;
  std::stringstream ss(o.worker);
  for (std::string id; std::getline(ss, id, ',');)
    if (!id.empty()) ids.push_back(id);
  ts::run_worker(plan, ids, o.results, {{"mode", o.worker_label}});
  return 0;
}

int run(const Opts& o) {
  if (o.plan.empty()) throw ts::InputError("batch needs a PLAN (or: touchstone batch merge SHARDS... -o REPORT)");
  if (!o.worker.empty()) return run_worker_mode(o);
  o.reports.check();
  const auto t0 = std::chrono::steady_clock::now();
  // A rank's GPU and threads are set before the plan's checks first touch CUDA.
  if (ts::mpi_launched()) ts::bind_local_rank();
  const ts::BatchPlan plan = ts::load_plan(o.plan);
  const std::string results = o.results.empty() ? default_results(o.plan) : o.results;
  const bool mpi = ts::mpi_launched();
  if (mpi && !ts::mpi_built())
    throw ts::InputError("started by mpirun, but this touchstone was built without MPI (cmake -DTOUCHSTONE_MPI=ON with "
                         "libopenmpi-dev installed)");
  if (mpi && !o.shard.empty()) throw ts::InputError("--shard and mpirun are two ways of splitting a plan: use one");

  if (o.dry_run) {
    int n = 1;
    if (!o.shard.empty()) n = parse_shard(o.shard).second;
    else if (o.workers > 0) n = o.workers;
    const auto units = ts::work_units(plan, n);
    const auto shards = ts::assign_shards(units, n);
    if (o.reports.json.on()) {
      nlohmann::json j = ts::dry_run_json(plan, units, shards, n);
      j["mpi_built"] = ts::mpi_built();
      o.reports.json.emit(j.dump(2) + "\n");
    }
    if (!o.reports.json.to_stdout()) std::cout << ts::dry_run_text(plan, units, shards, n) << std::flush;
    return 0;
  }
  // Bad input is exit 2 before any work, not cases left not judged.
  ts::check_plan(plan);

  std::error_code ec;
  fs::create_directories(results, ec);
  if (!fs::is_directory(results)) throw ts::InputError("--results " + results + ": cannot create the folder");
  if (::access(results.c_str(), W_OK) != 0) throw ts::InputError("--results " + results + ": folder not writable");

  if (mpi) {
    ts::MpiRunOptions mo;
    mo.results_dir = results;
    mo.rank_timeout_s = o.rank_timeout_s;
    mo.progress = o.progress || ts::Progress::enabled();
    if (o.resume) mo.skip = judged_ids(plan, results);
    const ts::MpiOutcome out = ts::run_mpi(plan, mo);
    int code = 0;
    if (out.root && o.resume) {
      std::vector<std::string> all;
      for (const auto& c : plan.cases) all.push_back(c.id);
      say_resumed(o.reports, plan, mo.skip, all, results);
    }
    if (out.root) {
      code = o.reports.emit(*out.report);
      // mpirun words any non-zero exit of a rank as an aborted job; the batch's last line says
      // first that it is the report's exit code (docs/batch.md "MPI").
      if (code != ts::kPass)
        (o.reports.any_stdout() ? std::cerr : std::cout)
            << "touchstone batch: exit " << code
            << (code == ts::kGateFailed ? " (not every case was ACCEPTed)" : " (bad input found while running)")
            << ", the report's verdict, not a crash: mpirun reports it as 'the job has been aborted'" << std::endl;
    }
    std::fflush(nullptr);
    ts::mpi_finish(out, code);
    return code;
  }

  // Only the records of cases this process runs are replaced: shards of one
  // plan may share the folder and run at the same time.
  std::set<std::string> skip;
  if (o.resume) skip = judged_ids(plan, results);

  ts::LocalRunOptions lo;
  lo.slots = ts::default_slots(o.workers);
  lo.results_dir = results;
  lo.progress = o.progress || ts::Progress::enabled();
  if (!o.shard.empty()) {
    const auto [index, count] = parse_shard(o.shard);
    const auto units = ts::work_units(plan, count);
    const auto shard_of = ts::assign_shards(units, count);
    std::vector<ts::WorkUnit> mine;
    ts::ShardFile sf;
    sf.plan = plan;
    sf.index = index;
    sf.count = count;
    sf.host = ts::host_name();
    for (size_t u = 0; u < units.size(); ++u)
      if (shard_of[u] == index) {
        mine.push_back(units[u]);
        for (size_t i : units[u].cases) sf.assigned.push_back(plan.cases[i].id);
      }
    std::sort(sf.assigned.begin(), sf.assigned.end());
    if (o.resume) say_resumed(o.reports, plan, skip, sf.assigned, results);
    lo.label = "shard " + std::to_string(index) + "/" + std::to_string(count);
    clear_records(plan, sf.assigned, skip, results);
    ts::run_local(plan, mine, skip, lo);
    const auto have = ts::read_results(results, plan);
    int code = 0;
    for (const auto& id : sf.assigned) {
      const auto it = have.find(id);
      if (it == have.end()) {
        code = 1;
        continue;
      }
      sf.results.emplace(id, it->second);
      if (!it->second.run || it->second.run->exit_code() != 0) code = 1;
    }
    const std::string out = !o.output.empty() ? o.output
                                              : (fs::path(results) / ("shard-" + std::to_string(index) + "-of-" +
                                                                      std::to_string(count) + ".json")).string();
    ts::write_file_atomic(out, sf.to_json().dump(1) + "\n");
    std::cout << "touchstone batch: shard " << index << "/" << count << ": " << sf.results.size() << " of "
              << sf.assigned.size() << " cases, written to " << out << "\n";
    return code;
  }
  if (!o.output.empty()) throw ts::InputError("-o names a shard file: give it with --shard I/N (reports: --json PATH)");
  const auto units = ts::work_units(plan, static_cast<int>(lo.slots.size()));
  std::vector<std::string> all;
  for (const auto& c : plan.cases) all.push_back(c.id);
  if (o.resume) say_resumed(o.reports, plan, skip, all, results);
  clear_records(plan, all, skip, results);
  const auto missing = ts::run_local(plan, units, skip, lo);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const ts::BatchReport rep =
      ts::assemble_report(plan, ts::read_results(results, plan), missing, execution_of("local", lo.slots.size(), wall));
  return o.reports.emit(rep);
}

struct MergeOpts {
  std::vector<std::string> inputs;
  std::string plan;
  Reports reports;
};

int merge(const MergeOpts& o) {
  o.reports.check();
  if (o.inputs.empty()) throw ts::InputError("merge needs shard files (or results folders with --plan-file)");
  std::optional<ts::BatchPlan> plan;
  if (!o.plan.empty()) plan = ts::load_plan(o.plan);
  std::vector<ts::ShardFile> shards;
  std::vector<std::string> dirs;
  for (const auto& in : o.inputs) {
    if (fs::is_directory(in)) {
      dirs.push_back(in);
      continue;
    }
    shards.push_back(ts::read_shard(in));
    const auto& s = shards.back();
    if (!plan) plan = s.plan;
    else if (s.plan.digest != plan->digest)
      throw ts::InputError(in + ": a shard of another plan (digest " + s.plan.digest + ", expected " + plan->digest + ")");
    if (s.count != shards.front().count)
      throw ts::InputError(in + ": shard " + std::to_string(s.index) + "/" + std::to_string(s.count) +
                           " of a split into " + std::to_string(shards.front().count));
  }
  if (!plan) throw ts::InputError("merge of results folders needs --plan-file PLAN");
  std::map<std::string, ts::BatchRecord> results;
  for (const auto& d : dirs)
    for (auto& [id, r] : ts::read_results(d, *plan)) results.emplace(id, r);
  std::map<std::string, std::string> missing;
  nlohmann::json hosts = nlohmann::json::array();
  if (!shards.empty()) {
    const int count = shards.front().count;
    std::set<int> seen;
    for (const auto& s : shards) {
      if (!seen.insert(s.index).second)
        throw ts::InputError("shard " + std::to_string(s.index) + "/" + std::to_string(count) + " given twice");
      hosts.push_back({{"shard", s.index}, {"host", s.host}});
      for (const auto& [id, r] : s.results) {
        // A judged record wins over a not-judged one of another source (a resumed shard).
        auto it = results.find(id);
        if (it == results.end() || (!it->second.run && r.run)) results[id] = r;
      }
      for (const auto& id : s.assigned)
        if (!s.results.count(id)) missing[id] = "shard " + std::to_string(s.index) + "/" + std::to_string(count) + " reported no result for it";
    }
    // Cases of shards whose files are absent: which shard owned them follows from the plan.
    const auto units = ts::work_units(*plan, count);
    const auto shard_of = ts::assign_shards(units, count);
    for (size_t u = 0; u < units.size(); ++u)
      if (!seen.count(shard_of[u]))
        for (size_t i : units[u].cases)
          missing[plan->cases[i].id] = "shard " + std::to_string(shard_of[u]) + "/" + std::to_string(count) +
                                       " is missing (no shard file given)";
  }
  nlohmann::json ex = {{"mode", "merge"}, {"host", ts::host_name()}, {"shards", hosts}};
  return o.reports.emit(ts::assemble_report(*plan, results, missing, ex));
}

void add_reports(CLI::App& app, Reports& r) {
  ts::cli::add_json_option(app, r.json, "the batch report (touchstone.batch-report/1)");
  ts::cli::add_report_option(app, "--junit", r.junit, "write JUnit XML (a suite per fixture, gate and baseline)");
  ts::cli::add_report_option(app, "--markdown", r.markdown, "write a Markdown summary");
  ts::cli::add_report_option(app, "--html", r.html, "write one self-contained HTML page");
}

ts::cli::Registration reg{
    "batch",
    "Judge a plan (touchstone.plan/1: fixtures x gates x baselines x candidates) as one report, in local "
    "workers, under mpirun, or as Slurm array shards (--shard I/N, then batch merge). Exit 0 all accepted, 1 "
    "otherwise, 2 bad input",
    [](CLI::App& app) -> ts::cli::Action {
      auto o = std::make_shared<Opts>();
      app.add_option("plan", o->plan, "plan file (touchstone.plan/1, docs/batch.md)");
      app.add_flag("--dry-run", o->dry_run, "print the cases, their shards and cost estimates; run nothing");
      app.add_option("--workers", o->workers,
                     "worker processes (default: one per GPU of nvidia-smi -L, else 1); threads split evenly")
          ->check(ts::cli::integer_in(1, 4096));
      app.add_option("--shard", o->shard, "run only shard I of N (I/N, 0-based) or slurm (SLURM_ARRAY_TASK_ID/COUNT)");
      ts::cli::mark_output(app.add_option("-o,--output", o->output, "with --shard: the shard file (default RESULTS/shard-I-of-N.json)"), true);
      app.add_option("--results", o->results, "folder of per-case records (default: PLAN with .results)");
      app.add_flag("--resume", o->resume, "skip cases judged already in the results folder");
      app.add_option("--rank-timeout", o->rank_timeout_s,
                     "under mpirun: a rank silent this long (no heartbeat) is taken as dead")
          ->capture_default_str()
          ->check(ts::cli::number_at_least(0, true));
      app.add_flag("--progress", o->progress, "progress lines on stderr even when it is not a terminal");
      add_reports(app, o->reports);
      app.add_option("--worker", o->worker, "")->group("");
      app.add_option("--worker-digest", o->worker_digest, "")->group("");
      app.add_option("--worker-label", o->worker_label, "")->group("");
      app.add_option("--worker-plan", o->worker_plan, "")->group("");
      ts::cli::set_example(app,
                           "touchstone batch plan.json --dry-run && touchstone batch plan.json --workers 2 --junit b.xml "
                           "--html b.html\n  mpirun -np 4 touchstone batch plan.json --json b.json");
      return [o] { return run(*o); };
    }};

ts::cli::Registration reg_merge{
    "batch merge",
    "Combine shard files of `touchstone batch PLAN --shard I/N` (or results folders, with --plan) into the "
    "report one process would write; absent shards' cases are named as not judged",
    [](CLI::App& app) -> ts::cli::Action {
      auto o = std::make_shared<MergeOpts>();
      app.add_option("inputs", o->inputs, "shard files, or results folders")->required();
      app.add_option("--plan-file", o->plan, "the plan (needed when only results folders are given)");
      add_reports(app, o->reports);
      ts::cli::mark_output(app.add_option("-o", o->reports.json.path, "the JSON report (as --json PATH)"), true);
      ts::cli::set_example(app, "touchstone batch merge shard-*.json -o report.json --junit report.xml");
      return [o] { return merge(*o); };
    }};

}  // namespace cmd_batch
