#pragma once
// The accuracy part of a candidate's Evidence, built the one way every gate
// run builds it: the candidate's figures against the baseline and against
// exact, with the worst head / query block / frame figures when the tensor is
// [S, H, D] and its geometry is known. The gate runner and the calibration
// tests (tests/calibration/) both call this, so the faults those tests plant
// are judged on exactly the figures a gate run sees.
#include <string>

#include "core/block_config.hpp"
#include "core/stored_tensor.hpp"
#include "core/tensor.hpp"
#include "gates/verdict.hpp"

namespace ts {

// metric_map() of a against b; with `config` and a rank-3 tensor, the
// breakdown's (metric_map(MetricBreakdown)) instead.
Figures accuracy_figures(TensorRef a, TensorRef b, const BlockConfig* config);

// Fills ev.vs_baseline[tensor], ev.vs_exact[tensor] and
// ev.baseline_vs_exact[tensor] (the latter computed once per run with
// accuracy_figures(baseline, exact, config)), and the details the reports
// show: vs_baseline, vs_exact (whole-tensor metrics), worst_vs_baseline and
// worst_vs_exact (the three worst groups, each ranked against its own
// reference), and ev.worst_vs_baseline / worst_vs_exact, from which a
// failing group rule names its worst group.
void add_accuracy_evidence(Evidence& ev, const std::string& tensor, TensorRef candidate,
                           TensorRef baseline, TensorRef exact, const Figures& baseline_vs_exact,
                           const BlockConfig* config);

}  // namespace ts
