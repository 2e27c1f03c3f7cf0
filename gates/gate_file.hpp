#pragma once
// touchstone.gate/1 (gates/README.md "Gate files"): what a backend must satisfy to be accepted.
// Parsing is strict: an unknown key, metric or tensor, a rule without a
// bound, a wrong type, empty rules or a repeated id is an InputError naming
// the file and JSON path.
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace ts {

inline constexpr const char* kGateSchema = "touchstone.gate/1";

// The error-growth bound of a stage (gates/README.md "growth"): the figure
// may be at most floor + factor x the largest figure of the same metric among
// the stages this one reads (core/block_stage_table.hpp), plus, with
// `rounding`, the unit roundoff of the coarser storage type when the two
// sides are stored in different types (bf16 against float64). A stage is then
// blamed only for error its inputs do not explain.
struct GrowthBound {
  bool from_table = false;  // "growth": "table": each stage's default floor and factor
  double floor = 0, factor = 0;
  bool rounding = true;
  nlohmann::json to_json() const;
};

struct GateRule {
  std::string id;
  std::string metric;              // a metric_names() name or "speedup"
  std::string against = "baseline";  // "baseline" or "exact" (speedup: baseline only)
  std::optional<double> min, max;
  // Candidate-vs-exact figure <= k * baseline-vs-exact figure (against exact only).
  std::optional<double> max_ratio_to_baseline;
  std::optional<GrowthBound> growth;
  double confidence = 0.95;  // two-sided bootstrap interval of the speedup
  bool optional = false;     // a missing measurement is not INCONCLUSIVE
  std::string tensor;        // overrides the gate's tensor for this rule ("" = the gate's)
  std::string description;

  bool is_speed() const { return metric == "speedup"; }
  // "<= 0.05", ">= 1 (95% lower bound)", "<= 2 x baseline", ">= 0.99 and <= 1.01".
  std::string bound_text() const;
  nlohmann::json to_json() const;
};

struct GateFile {
  std::string source;  // path or "builtin:NAME"
  std::string name, description;
  std::string baseline = "sage2";  // backend spec string
  std::string tensor = "attention";
  std::vector<GateRule> rules;
  // An emulation (exact, sage2, sol and their device mirrors) computes what a
  // kernel would, at a speed no kernel has: speed rules with an emulation on
  // either side are missing unless the gate opts in (benchmarking touchstone itself).
  bool time_emulations = false;

  // The tensor a rule is judged on.
  const std::string& tensor_of(const GateRule& r) const { return r.tensor.empty() ? tensor : r.tensor; }
  nlohmann::json to_json() const;
};

// `where` names the source in error messages.
// A figure or bound as messages and reports print it: `digits` significant
// digits, "NaN" for NaN.
std::string format_number(double v, int digits = 4);

GateFile parse_gate(const std::string& text, const std::string& where);
// A path when the argument names one (names_gate_file), else one of
// builtin_gate_names() (the shipped gates/*.json compiled into the binary);
// an unknown name is an InputError listing the built-ins.
GateFile load_gate(const std::string& path_or_name);
// Whether a gate argument names a file: it holds a '/' or ends in ".json"
// (./my_gate, gates/x.json, x.json); any other word is a built-in's name.
bool names_gate_file(const std::string& arg);
const std::vector<std::string>& builtin_gate_names();
const std::string& builtin_gate_text(const std::string& name);  // InputError if unknown

// "attention", "stages" and the block stage names of block.md.
const std::vector<std::string>& gate_tensor_names();

}  // namespace ts
