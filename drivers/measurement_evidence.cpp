#include "drivers/measurement_evidence.hpp"

#include <algorithm>

#include "core/error.hpp"

namespace ts {

void MeasurementProvider::prepare(const std::vector<const Case*>& cases) {
  for (const Case* c : cases) {
    if (!files_.count(c->input)) files_.emplace(c->input, load_measurements(c->input));
    const auto all = files_.at(c->input).backends();
    for (const auto* n : {&c->baseline, &c->candidate})
      if (std::find(all.begin(), all.end(), *n) == all.end()) {
        std::string list;
        for (const auto& b : all) list += (list.empty() ? "" : ", ") + b;
        throw InputError(c->input + ": no backend named '" + *n + "' (backends: " + list + ")");
      }
  }
}

Evidence MeasurementProvider::gather(const Case& c, CaseFigures& figures) {
  figures.backend = c.candidate;
  return evidence_from_measurements(files_.at(c.input), gate_, c.baseline, c.candidate, seed_);
}

nlohmann::json MeasurementProvider::context_of(const std::string& path) const {
  auto it = files_.find(path);
  if (it == files_.end()) return nlohmann::json::object();
  return {{"source", it->second.source}, {"report", it->second.context}, {"notes", it->second.notes}};
}

std::vector<Case> measurement_cases(const std::string& path, const std::string& baseline_spec,
                                    const std::vector<std::string>& candidates, const std::string& gate_arg,
                                    const CaseOptions& opts) {
  const MeasurementsFile m = load_measurements(path);
  const std::string baseline = resolve_measured_baseline(m, baseline_spec);
  std::vector<std::string> names = candidates;
  if (names.empty())
    for (const auto& b : m.backends())
      if (b != baseline) names.push_back(b);
  if (names.empty()) throw InputError(path + ": no candidate besides the baseline '" + baseline + "'");
  CaseRequest r;
  r.source = CaseSource::measurements;
  r.input = path;
  r.baseline = baseline;
  r.candidates = names;
  r.gate_arg = gate_arg;
  r.options = opts;
  return make_cases(r);
}

}  // namespace ts
