#pragma once
// The block stack over a chain set (docs/chain.md): every block of every
// denoising step run three ways, each stack carrying its own residual stream
// from block to block and step to step (fixtures/block/chain_step.hpp):
//   exact     fp64 linears, the exact attention
//   baseline  the production linears (NVFP4 te), the baseline's attention (sage2)
//   candidate the production linears, the schedule's attention at each cell
// and, per cell where the candidate's input or attention differs from the
// baseline's, the candidate's block on the baseline's input, which splits the
// error after the block into what the block adds itself and what it carries:
//   e_out <= carried + own            (the triangle inequality; tested)
//   own     = |F_c(x_base) - F_base(x_base)| / |F_base(x_base)|
//   carried = |F_c(x_c)    - F_c(x_base)|    / |F_base(x_base)|,  growth = carried / e_in
// Every schedule given runs in one pass over the files (one fixture's block
// inputs in memory at a time); schedules that agree so far share their runs.
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "drivers/chain_schedule.hpp"
#include "gates/metrics.hpp"
#include "kernels_under_test/registry.hpp"

namespace ts {

struct ChainSet {
  std::string label;  // the folder, or the first file
  int blocks = 0, steps = 0;
  // The step rule's dt (fixtures/block/chain_step.hpp); nullopt: a set without the
  // `chain` attribute (a capture), whose steps each start from their own stored x.
  std::optional<double> dt;
  std::vector<std::string> files;  // [step * blocks + block]
  const std::string& at(int block, int step) const { return files[static_cast<size_t>(step * blocks + block)]; }
};

// Files, or one folder (its *.h5): every (block_index, step) of a full grid
// exactly once, each with /block, one geometry. InputError before any work.
ChainSet open_chain_set(const std::vector<std::string>& args);

using BackendMaker = std::function<std::unique_ptr<AttentionBackend>(const std::string&, const BackendContext&)>;

struct ChainOptions {
  std::string baseline;  // attention spec; "" = sage2 at the default preset
  std::string exact = "exact";
  std::string linear = "nvfp4", recipe = "te";  // the production stacks' linears
  std::string block_backend = "block";          // block | block_cuda (block_backend_kinds)
  BackendMaker make;                            // empty: make_attention_backend (tests plant faults here)
  std::function<void()> progress;               // after each cell
};

struct ChainCell {
  int block = 0, step = 0;
  std::string spec;
  bool dense = false;  // the baseline's spec at this cell
  double in_error = 0;  // the stack's block input against the baseline stack's (rel_l2)
  MetricSet vs_baseline, vs_exact;  // the block's output
  double own = 0, carried = 0;
  std::optional<double> growth;  // carried / in_error; none when in_error is 0
  double attention_ms = 0;       // this cell's attention stage
  std::string clock;             // device_events (a device backend's own time) | host_steady
  std::optional<double> density;  // the backend's routed density (sol); dense: none
};

struct ChainResult {
  Schedule schedule;
  std::vector<ChainCell> cells;  // step-major
  std::string error;             // non-empty: a backend failed; cells up to it kept
  const ChainCell& last() const { return cells.back(); }
  double attention_ms() const;
  double work() const;  // dense-equivalent work: sum over cells of density (1 when dense) / cells
  bool emulated = true;  // every spec an emulation (is_emulation_spec): its time is not a kernel's
};

struct BaselineCell {
  MetricSet vs_exact;
  double attention_ms = 0;
  std::string clock;
  bool matches_fixture = false;  // the stack's input equals the stored /block/x bit for bit
};

struct ChainRun {
  ChainSet set;
  ChainOptions opts;
  std::vector<BaselineCell> baseline;  // step-major
  std::vector<ChainResult> chains;
  double baseline_attention_ms() const;
  double wall_s = 0;
  int block_runs = 0;
};

// Bad specs, schedules or files -> InputError before any block runs.
ChainRun run_chains(const ChainSet& set, const std::vector<Schedule>& schedules, const ChainOptions& opts);

}  // namespace ts
