#pragma once
// Local execution of a plan's work units in child processes (docs/batch.md
// "Local workers"): one worker per GPU (CUDA_VISIBLE_DEVICES) or per core
// set (OMP_NUM_THREADS), each a fresh `touchstone batch PLAN --worker IDS`
// that writes its records to the results folder. A worker that dies loses
// only its unit: the unit's cases without a record run again one per worker,
// and a case that kills its worker alone is not judged, with the signal.
#include <map>
#include <set>
#include <string>
#include <vector>

#include "drivers/batch_plan.hpp"
#include "drivers/batch_run.hpp"

namespace ts {

struct WorkerSlot {
  std::string cuda_visible_devices;  // "" = leave the variable as it is
  int threads = 1;                   // OMP_NUM_THREADS
};

struct LocalRunOptions {
  std::vector<WorkerSlot> slots;  // one worker process per slot
  std::string exe;                // the touchstone binary ("" = /proc/self/exe)
  std::string results_dir;
  bool progress = false;          // lines on stderr as units finish
  std::string label = "local";    // execution["mode"] of the records
};

// The slots: `workers` > 0 as asked (GPUs shared out round robin when there
// are any), else one per GPU of `nvidia-smi -L` (or of CUDA_VISIBLE_DEVICES),
// else one for the whole machine. Threads: the machine's (or OMP_NUM_THREADS)
// split evenly, at least one each.
std::vector<WorkerSlot> default_slots(int workers);

// Under mpirun, before anything touches CUDA: a rank gets GPU
// (local rank mod GPUs) as CUDA_VISIBLE_DEVICES when that is not set, and
// its share of the node's cores when OMP_NUM_THREADS is not set. Returns a
// line saying what it did ("" when nothing).
std::string bind_local_rank();

// Runs the units' cases not in `skip` and returns the reasons of cases that
// got no record (their workers died). Records land in opts.results_dir.
std::map<std::string, std::string> run_local(const BatchPlan& plan, const std::vector<WorkUnit>& units,
                                             const std::set<std::string>& skip, const LocalRunOptions& opts);

// The worker's side: judges the cases `ids` (one work unit) and writes their
// records. TOUCHSTONE_BATCH_FAULT (tests only, docs/batch.md) injects a crash.
void run_worker(const BatchPlan& plan, const std::vector<std::string>& ids, const std::string& results_dir,
                const nlohmann::json& execution);

// Test-only fault injection: "crash:ID" makes a worker judging case ID die
// on SIGSEGV; "rank:R:after:K" makes MPI rank R die on SIGKILL after K units.
void inject_fault_for_case(const std::string& id);
void inject_fault_for_rank(int rank, int units_done);

}  // namespace ts
