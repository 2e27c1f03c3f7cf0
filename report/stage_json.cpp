// The JSON of `touchstone compare --stages` (schema touchstone.stage-comparison/1).
#include "gates/verdict.hpp"
#include "report/stage_report.hpp"

namespace ts {

nlohmann::json stage_json(const StageComparison& c) {
  nlohmann::json rows_j = nlohmann::json::array();
  int failed = 0, judged = 0;
  for (const auto& r : c.rows) {
    nlohmann::json j = {{"stage", r.stage}, {"status", r.status()}};
    if (!r.missing_in.empty()) j["missing"] = r.missing_in;
    if (r.metrics) {
      j["metrics"] = r.metrics->to_json();
      j["dtype"] = r.dtype;
    }
    j["rules"] = nlohmann::json::array();
    if (r.verdict) {
      ++judged;
      if (r.verdict->verdict != Verdict::accept) ++failed;
      j["verdict"] = verdict_name(r.verdict->verdict);
      for (const auto& o : r.verdict->outcomes) j["rules"].push_back(o.to_json());
      j["notes"] = r.verdict->notes;
    }
    rows_j.push_back(j);
  }
  auto opt = [](const std::string& s) { return s.empty() ? nlohmann::json(nullptr) : nlohmann::json(s); };
  return {{"schema", "touchstone.stage-comparison/1"},
          {"fixture", c.fixture},
          {"a", c.a},
          {"b", c.b},
          {"exact", opt(c.exact)},
          {"gate", c.run.gate.to_json()},
          {"stages", rows_j},
          {"compared", c.compared},
          {"judged", judged},
          {"failed", failed},
          {"first_failing_stage", opt(c.first_failing)},
          {"first_inconclusive_stage", opt(c.first_inconclusive)},
          {"exit_code", c.exit_code()}};
}

}  // namespace ts
