#pragma once
// `mpirun -np N touchstone batch PLAN` (docs/batch.md "MPI"): one rank per
// GPU, the work units split by estimated cost (assign_shards), every rank
// writing its records to the results folder as units finish and sending
// them to rank 0, which assembles the report. A rank that dies or stops
// sending heartbeats for rank_timeout_s leaves its unjudged cases named in
// the report. Built only with OpenMPI found (TOUCHSTONE_MPI).
#include <optional>
#include <set>
#include <string>

#include "drivers/batch_plan.hpp"
#include "drivers/batch_run.hpp"

namespace ts {

// Whether this binary was built with MPI.
bool mpi_built();
// Whether mpirun started this process (OMPI_COMM_WORLD_SIZE, PMIX_RANK or PMI_SIZE set).
bool mpi_launched();

struct MpiRunOptions {
  std::string results_dir;
  std::set<std::string> skip;  // judged already (--resume)
  double rank_timeout_s = 60;
  bool progress = false;
};

struct MpiOutcome {
  bool root = false;                 // rank 0: `report` is set
  std::optional<BatchReport> report;
  bool peers_lost = false;           // a rank died: rank 0 must not wait in MPI_Finalize
  int rank = 0, size = 1;
};

// Initialises MPI, runs this rank's share, gathers on rank 0. InputError
// (same on every rank) when the ranks disagree on the plan.
MpiOutcome run_mpi(const BatchPlan& plan, const MpiRunOptions& opts);
// MPI_Finalize; after a lost peer MPI_Abort with `code` instead (MPI_Finalize
// would wait for the dead): the report must be written before.
void mpi_finish(const MpiOutcome& o, int code);

}  // namespace ts
