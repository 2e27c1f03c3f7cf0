#include "gates/accuracy_evidence.hpp"

#include "gates/metrics.hpp"

namespace ts {
namespace {

bool has_breakdown(TensorRef a, const BlockConfig* config) { return config && a.rank() == 3; }

}  // namespace

Figures accuracy_figures(TensorRef a, TensorRef b, const BlockConfig* config) {
  if (has_breakdown(a, config)) return metric_map(compute_breakdown(a, b, *config));
  return metric_map(compute_metrics(a, b));
}

void add_accuracy_evidence(Evidence& ev, const std::string& tensor, TensorRef candidate,
                           TensorRef baseline, TensorRef exact, const Figures& baseline_vs_exact,
                           const BlockConfig* config) {
  if (has_breakdown(candidate, config)) {
    const MetricBreakdown vb = compute_breakdown(candidate, baseline, *config);
    const MetricBreakdown ve = compute_breakdown(candidate, exact, *config);
    ev.vs_baseline[tensor] = metric_map(vb);
    ev.vs_exact[tensor] = metric_map(ve);
    ev.details["vs_baseline"] = vb.overall.to_json();
    ev.details["vs_exact"] = ve.overall.to_json();
    ev.details["worst_vs_baseline"] = vb.worst(3);
    ev.details["worst_vs_exact"] = ve.worst(3);
    ev.worst_vs_baseline[tensor] = worst_group_map(vb);
    ev.worst_vs_exact[tensor] = worst_group_map(ve);
  } else {
    const auto [vb, ve] = compute_metrics_pair(candidate, baseline, exact);
    ev.vs_baseline[tensor] = metric_map(vb);
    ev.vs_exact[tensor] = metric_map(ve);
    ev.details["vs_baseline"] = vb.to_json();
    ev.details["vs_exact"] = ve.to_json();
  }
  ev.baseline_vs_exact[tensor] = baseline_vs_exact;
}

}  // namespace ts
