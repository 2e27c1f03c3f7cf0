#pragma once
// Evidence of measurements cases: a touchstone.measurements/1 file (an
// imported benchmark report) read once, each case one of its backends against
// its baseline (gates/measurements.hpp evidence_from_measurements).
#include <map>
#include <string>

#include "drivers/run_cases.hpp"
#include "gates/measurements.hpp"

namespace ts {

class MeasurementProvider final : public EvidenceProvider {
 public:
  MeasurementProvider(const GateFile& gate, uint64_t seed) : gate_(gate), seed_(seed) {}
  void prepare(const std::vector<const Case*>& cases) override;
  Evidence gather(const Case& c, CaseFigures& figures) override;
  // What the report says of the file: its source, context and notes.
  nlohmann::json context_of(const std::string& path) const;

 private:
  const GateFile& gate_;
  uint64_t seed_;
  std::map<std::string, MeasurementsFile> files_;
};

// The cases of `touchstone gate --measurements M`: each named candidate (all
// but the baseline when none is named) against the baseline the file resolves
// `baseline_spec` to. InputError naming the backends when a name is unknown.
std::vector<Case> measurement_cases(const std::string& path, const std::string& baseline_spec,
                                    const std::vector<std::string>& candidates, const std::string& gate_arg,
                                    const CaseOptions& opts);

}  // namespace ts
