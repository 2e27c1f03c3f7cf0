#pragma once
// The metrics of docs/metrics.md, accumulated in float64. `a` is the candidate, `b`
// what it is compared against. NaN never passes: any non-finite value in `a`
// is counted and makes every accuracy rule fail (see gates/rules).
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/block_config.hpp"
#include "core/stored_tensor.hpp"
#include "core/tensor.hpp"
#include "gates/worst_group.hpp"

namespace ts {

struct MetricSet {
  int64_t count = 0;
  // Relative metrics are undefined (nullopt) when ||b||_2 = 0 (resp. sum|b| = 0):
  // reported as undefined, never divided.
  std::optional<double> rel_l2, cosine, rel_l1;
  // a·b / ||b||²: the factor that scales b closest to a (least squares). A
  // kernel that scales its output by 1.03 has gain 1.03 whatever its noise;
  // quantisation noise leaves it near 1 (docs/metrics.md).
  std::optional<double> gain;
  double rmse = 0, max_abs = 0, mean_abs = 0;
  int64_t nonfinite = 0;       // NaN/Inf in a
  int64_t nonfinite_ref = 0;   // NaN/Inf in b (the comparison itself is then suspect)
  double zero_fraction = 0;    // share of exact zeros in a
  double zero_fraction_ref = 0;
  // Largest distance in units in the last place at the storage type (bf16,
  // f16, f32 or f64); infinite when any value is non-finite. When a and b are
  // stored in different types, both are rounded (to nearest even) to the one
  // of fewer significand bits and counted there (ulp_note() says so): the
  // float64 bits of a bf16 value are not ulps of anything.
  double ulp_max = 0;
  // Share of elements equal at the storage type (ulp distance 0; NaN is never
  // equal): how many codes or scales of an emulation match a real kernel's
  // bit for bit, where rel_l2 would hide a systematic one-ulp offset.
  double identical_fraction = 0;
  // The storage types of a and b (Tensor::dtype) and the one ulp_max and
  // identical_fraction are counted at (ulp_storage of the two).
  DType storage = DType::f64, storage_ref = DType::f64, ulp_at = DType::f64;
  void set_storage(DType a, DType b);
  // "" when both sides share a type; else what ulp_max was counted at and how.
  std::string ulp_note() const;

  // Value of a metric by its docs/metrics.md name ("rel_l2", "cosine", ...); nullopt
  // when undefined. Throws InputError for an unknown name.
  std::optional<double> get(const std::string& name) const;
  nlohmann::json to_json() const;
};

// Names accepted by MetricSet::get, in docs/metrics.md's order.
const std::vector<std::string>& metric_names();
// Figures of the worst group of a breakdown (docs/metrics.md), so that one
// head, query block or frame cannot hide in the whole tensor's average:
// rel_l2_worst_head, rel_l2_worst_qblock, rel_l2_worst_frame (the
// conditioning tokens count as one more frame), gain_error_worst_head (the
// largest |gain - 1| of a head).
const std::vector<std::string>& breakdown_metric_names();
// What a gate rule or a measurement may name: metric_names() then
// breakdown_metric_names().
const std::vector<std::string>& gate_metric_names();

// The type ulp distances between values stored as `a` and `b` are counted at:
// the one of fewer significand bits (bf16 < f16 < f32 < f64); an integer type
// (codes: one unit is 1) when either is one.
DType ulp_storage(DType a, DType b);

// a and b must have the same shape (InputError otherwise). ulp_max and
// identical_fraction count at ulp_storage(a.dtype, b.dtype).
MetricSet compute_metrics(TensorRef a, TensorRef b);
// Same, with ulp_max counted at `storage` (the storage fields are left as f64).
MetricSet compute_metrics(TensorRef a, TensorRef b, DType storage);
// {compute_metrics(a, b), compute_metrics(a, c)}, the same bits, in one pass over a.
std::pair<MetricSet, MetricSet> compute_metrics_pair(TensorRef a, TensorRef b, TensorRef c);

// Hidden figures of metric_map (not gate metrics): the storage types of the
// two sides as DType codes, so that judge() can refuse a bit-exact rule
// between different types (gates/storage_check.hpp).
inline constexpr const char* kStorageFigure = "storage_candidate";
inline constexpr const char* kStorageRefFigure = "storage_reference";

// Every metric by name, for the verdict: the docs/metrics.md names (undefined ones
// present as nullopt) plus "nonfinite_ref" and "zero_fraction_ref".
std::map<std::string, std::optional<double>> metric_map(const MetricSet& m);

// A figure in a JSON report: the number; "NaN", "Infinity" or "-Infinity",
// which JSON cannot hold (a NaN written as null would read as "no figure");
// null when there is none. figure_of reads it back (nullopt: none).
nlohmann::json figure_json(const std::optional<double>& v);
std::optional<double> figure_of(const nlohmann::json& j);

// Distance in units in the last place between two values stored as `storage`
// (ordered-integer distance of their bit patterns; integer types: |x - y|).
// Infinite when either is non-finite (unless both are the same infinity).
double ulp_distance(double x, double y, DType storage);

// Per-head, per-128-token-query-block and per-latent-frame breakdowns of a
// [S, H, D] comparison (frames from config.frame_of_token; conditioning
// tokens grouped under "cond").
struct MetricBreakdown {
  MetricSet overall;
  std::vector<MetricSet> per_head;
  std::vector<MetricSet> per_query_block;  // 128 tokens each, last may be short
  std::vector<MetricSet> per_frame;        // grid_t frames
  std::optional<MetricSet> cond;           // all conditioning tokens
  int64_t tokens = 0;                      // S
  nlohmann::json to_json() const;
  // The `n` worst groups of each breakdown by `metric` (rel_l2 by default),
  // for triage printouts: {"per_head": [{"index": h, "value": v}, ...], ...}.
  nlohmann::json worst(size_t n, const std::string& metric = "rel_l2") const;
};
MetricBreakdown compute_breakdown(TensorRef a, TensorRef b, const BlockConfig& config);

// metric_map(b.overall) plus the breakdown_metric_names() figures. A worst
// figure is NaN when any group's is NaN (NaN never passes), undefined when
// no group's is defined; groups whose figure is undefined are left out.
std::map<std::string, std::optional<double>> metric_map(const MetricBreakdown& b);

// For each breakdown_metric_names() figure of metric_map(b), the group it
// came from (the first on ties; a NaN group wins, as it does the figure).
// Absent when no group's figure is defined.
std::map<std::string, WorstGroup> worst_group_map(const MetricBreakdown& b);

}  // namespace ts
