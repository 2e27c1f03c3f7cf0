#pragma once
// touchstone scan (docs/scan.md): a kernel's error against shape on synthetic fixtures, to
// find the shape where it breaks (SageAttention's FP8 P.V path returning noise above ~160 k
// tokens, FlashAttention-4's FP8 path at kv_len 128). A grid over the range first, then
// bisection of the interval where the error leaves its trend, until the cliff lies within
// one multiple of the shape or 1 % of it: 1 k..200 k tokens in 12 evaluations.
//
// The search (scan_search) only sees a function from a shape to a figure, so it is tested
// on planted curves in microseconds; run_scan gives it the real evaluation: synthesize the
// fixture of that shape (fixtures/synth.hpp), run the candidate (any backend spec or plugin
// in process, or a worker process speaking the line protocol below for kernels in another
// language) and the exact reference, and measure the candidate against exact.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/block_config.hpp"

namespace ts {

// What is varied; the other two stay at the preset's value (or the one given).
enum class ScanDim { seq, heads, head_dim };
ScanDim parse_scan_dim(const std::string& name);  // "seq", "heads", "head_dim"; InputError otherwise
const char* scan_dim_name(ScanDim d);

struct ScanSearchOptions {
  int64_t from = 0, to = 0;  // the range, both evaluated
  // The first grid, geometric from..to (>= 4: a trend needs three steps, so
  // that one step off it stands out). 4 points leave 8 bisections of a 12
  // budget: a factor 5.8 narrowed to 1 % (2^8 halvings of its log ratio).
  int points = 4;
  int budget = 12;           // evaluations in all, grid included
  int64_t multiple = 1;      // every shape a multiple of this (a kernel's tile), and the finest step
  double resolution = 0.01;  // stop when the cliff's interval is within this share of its lower end
  // A step between two neighbours is a departure from the trend when the
  // figure changes by more than this factor beyond what the trend predicts
  // (or turns non-finite, or a run fails).
  double jump = 3;
  // Figures below this count as this (float64 roundoff of 1 - cos is ~1e-16,
  // so noise between 1e-15 and 1e-14 must not read as a cliff).
  double floor = 1e-12;
};

struct ScanEvaluation {
  int64_t x = 0;
  std::optional<double> figure;  // absent: the run failed (error) or the figure is undefined
  std::string error;
  double ms = 0;      // wall time of the candidate's run
  int order = 0;      // 0, 1, 2 ... in evaluation order
  bool grid = false;  // one of the first grid's points (else a bisection step)
};

struct ScanCliff {
  int64_t below = 0, above = 0;  // the last shape on the trend's side, the first past it
  std::optional<double> figure_below, figure_above;
  bool located = false;  // within the resolution (else the budget ran out first)
  std::string text;      // one line
};

struct ScanSearchResult {
  std::vector<ScanEvaluation> evaluations;  // in order of evaluation
  // The trend: d log10(figure) / d log10(x), the median over the grid's steps;
  // none when no two neighbouring grid runs gave a finite figure.
  std::optional<double> slope;
  std::optional<ScanCliff> cliff;
  std::vector<std::pair<int64_t, int64_t>> other_departures;  // further grid steps off the trend, not bisected
  std::vector<ScanEvaluation> sorted() const;                // by x
};

// The figure the trend is taken of: larger is worse. An evaluation whose
// figure is absent or not finite is "broken", on the other side of any
// cliff from a finite one.
using ScanFunction = std::function<ScanEvaluation(int64_t x)>;
ScanSearchResult scan_search(const ScanSearchOptions& opts, const ScanFunction& evaluate);

struct ScanOptions {
  ScanSearchOptions search;
  ScanDim dim = ScanDim::seq;
  std::string candidate;  // a backend spec or plugin:PATH ("" with a worker)
  std::string worker;     // a shell command speaking the worker protocol ("" with a candidate)
  std::string exact = "exact";
  std::string metric = "rel_l2";  // rel_l2, rel_l1, rmse, max_abs, cosine (as 1 - cos)
  std::string preset = "ci";      // the geometry the shapes are cut from
  std::optional<int64_t> seq, heads, head_dim;  // the fixed dimensions (default: the preset's)
  uint64_t seed = 0;
  double structure = 0.7;
  std::string work_dir;  // worker fixtures ("" = the system's temporary directory)
  bool progress = false;  // a line per evaluation on stderr
  bool allow_slow = false;  // start even when the dense CPU runs are estimated over the limit
};

// The geometry of one scanned shape: the preset's, with S tokens (video and
// conditioning in the preset's proportions, the frame's aspect kept), H
// heads and head dim D.
BlockConfig scan_config(const std::string& preset, int64_t S, int64_t H, int64_t D);

struct ScanResult {
  ScanOptions options;
  ScanSearchResult search;
  std::string candidate_name;  // the backend's name, or the worker's
  int exit_code() const;     // 0 no cliff and every run finite; 1 otherwise
};  // its terminal table, HTML page and JSON: report/scan_report.hpp

// What the trend is taken of, by metric: the metric itself, or "1 - cosine".
std::string scan_figure_name(const std::string& metric);

// Bad options, specs or a worker that does not start -> InputError before the scan.
ScanResult run_scan(const ScanOptions& opts);

// The worker protocol: touchstone starts the command once (sh -c), then per
// shape writes "run PATH\n" on its stdin, PATH a fixture of that shape; the
// worker stores its kernel's output there as /outputs/scan/attention and
// answers one line on its stdout: "ok", or "error MESSAGE" (the evaluation
// counts as failed, the scan goes on). "quit\n" ends it. A worker that exits
// early fails the remaining evaluations with its exit status.
inline constexpr const char* kScanWorkerOutput = "scan";

}  // namespace ts
