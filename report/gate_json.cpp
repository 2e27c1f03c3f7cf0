#include "report/gate_report.hpp"

namespace ts {

std::string render_json(const GateRun& run) { return run.to_json().dump(2) + "\n"; }

}  // namespace ts
