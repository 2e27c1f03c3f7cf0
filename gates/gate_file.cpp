#include "gates/gate_file.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <sstream>
#include <utility>

#include "core/block_stage_table.hpp"
#include "core/error.hpp"
#include "core/printable.hpp"
#include "core/suggest.hpp"
#include "gates/json_input.hpp"
#include "gates/metric_range.hpp"
#include "gates/metrics.hpp"

namespace ts {
namespace {

// Generated at configure time from gates/*.json (see the gates block in
// CMakeLists.txt): {"sparse_acceptance", R"(...)"}, ...
const std::pair<const char*, const char*> kBuiltin[] = {
#include "gates/builtin_gates.inc"
};

}  // namespace

std::string format_number(double v, int digits) {
  if (std::isnan(v)) return "NaN";
  std::ostringstream ss;
  ss.precision(digits);
  ss << v;
  return ss.str();
}

namespace {

GrowthBound parse_growth(const nlohmann::json& j, const std::string& where, const std::string& path) {
  GrowthBound g;
  if (j.is_string()) {
    if (j.get<std::string>() != "table")
      throw InputError(where + ": " + path + ": expected \"table\" or {floor, factor, rounding}, got \"" +
                       j.get<std::string>() + "\"");
    g.from_table = true;
    return g;
  }
  json_input::ObjectReader r(j, where, path);
  r.allow_only({"floor", "factor", "rounding"});
  const auto f = r.opt_number("floor"), k = r.opt_number("factor");
  if (!f || !k) throw InputError(where + ": " + path + ": needs both floor and factor (or the string \"table\")");
  if (!(*f >= 0)) r.fail("floor", "must not be negative");
  if (!(*k >= 0)) r.fail("factor", "must not be negative");
  g.floor = *f;
  g.factor = *k;
  if (auto ro = r.opt_bool("rounding")) g.rounding = *ro;
  r.finish();
  return g;
}

// A bound outside what the metric can be is a mistake either way: on the
// failing side the rule can never pass, on the passing side it can never
// fail (`min: -5` on rel_l2). A bound at the range's own end (`max: 1` on
// cosine, `min: 0` on rel_l2) is a deliberate statement and is kept.
void check_bounds_in_range(const GateRule& rule, const json_input::ObjectReader& r) {
  const auto range = metric_range(rule.metric);
  if (!range) return;
  const std::string what = rule.metric + " is always in " + range->text();
  if (rule.min && !range->contains(*rule.min)) {
    const bool never_passes = *rule.min > range->hi;
    r.fail("min", "min " + format_number(*rule.min, 6) + " can never " +
                      (never_passes ? "pass" : "fail") + " (" + what + ")");
  }
  if (rule.max && !range->contains(*rule.max)) {
    const bool never_passes = range->lo_open ? *rule.max <= range->lo : *rule.max < range->lo;
    r.fail("max", "max " + format_number(*rule.max, 6) + " can never " +
                      (never_passes ? "pass" : "fail") + " (" + what + ")");
  }
}

GateRule parse_rule(const nlohmann::json& j, const std::string& where, const std::string& path) {
  json_input::ObjectReader r(j, where, path);
  r.allow_only({"id", "metric", "against", "min", "max", "max_ratio_to_baseline", "growth", "confidence",
                "optional", "tensor", "description"});
  GateRule rule;
  rule.id = r.req_string("id");
  rule.metric = r.req_string("metric");
  const auto& names = gate_metric_names();
  if (!rule.is_speed() && std::find(names.begin(), names.end(), rule.metric) == names.end()) {
    std::string list;
    for (const auto& n : names) list += n + ", ";
    r.fail("metric", "unknown metric '" + rule.metric + "' (expected one of " + list + "speedup)");
  }
  if (auto a = r.opt_string("against")) {
    if (*a != "baseline" && *a != "exact")
      r.fail("against", "expected \"baseline\" or \"exact\", got \"" + *a + "\"");
    rule.against = *a;
  }
  rule.min = r.opt_number("min");
  rule.max = r.opt_number("max");
  rule.max_ratio_to_baseline = r.opt_number("max_ratio_to_baseline");
  if (const auto* g = r.optional("growth")) rule.growth = parse_growth(*g, where, path + ".growth");
  if (!rule.min && !rule.max && !rule.max_ratio_to_baseline && !rule.growth)
    throw InputError(where + ": " + path + ": rule '" + rule.id +
                     "' has no bound (give min, max, max_ratio_to_baseline or growth)");
  if (rule.min && rule.max && *rule.min > *rule.max)
    r.fail("min", "min " + format_number(*rule.min, 6) + " is above max " + format_number(*rule.max, 6));
  check_bounds_in_range(rule, r);
  if (auto c = r.opt_number("confidence")) {
    if (!rule.is_speed()) r.fail("confidence", "only a speedup rule has a confidence");
    if (!(*c > 0.0 && *c < 1.0)) r.fail("confidence", "expected a number between 0 and 1 (exclusive)");
    rule.confidence = *c;
  }
  if (rule.growth) {
    if (rule.is_speed()) r.fail("growth", "not meaningful for speedup (use min)");
    if (rule.metric == "cosine") r.fail("growth", "not meaningful for cosine (higher is better)");
  }
  if (rule.is_speed()) {
    if (rule.against != "baseline") r.fail("against", "speedup is measured against the baseline only");
    if (rule.max_ratio_to_baseline)
      r.fail("max_ratio_to_baseline", "not meaningful for speedup (use min)");
  }
  if (rule.max_ratio_to_baseline) {
    if (rule.against != "exact")
      r.fail("max_ratio_to_baseline",
             "needs \"against\": \"exact\" (the baseline against itself is 0)");
    if (rule.metric == "cosine")
      r.fail("max_ratio_to_baseline", "not meaningful for cosine (higher is better; use min)");
    if (*rule.max_ratio_to_baseline < 0) r.fail("max_ratio_to_baseline", "must not be negative");
  }
  if (auto o = r.opt_bool("optional")) rule.optional = *o;
  if (auto t = r.opt_string("tensor")) {
    const auto& tn = gate_tensor_names();
    if (std::find(tn.begin(), tn.end(), *t) == tn.end())
      r.fail("tensor", "unknown tensor '" + *t + "' (expected attention, stages or a block stage name)");
    rule.tensor = *t;
  }
  if (auto d = r.opt_string("description")) rule.description = *d;
  r.finish();
  return rule;
}

}  // namespace

const std::vector<std::string>& gate_tensor_names() {
  // "attention" is both the attention tensor and a block stage.
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v = {"stages"};
    for (const auto& s : block_stage_table()) v.emplace_back(s.name);
    return v;
  }();
  return names;
}

std::string GateRule::bound_text() const {
  std::vector<std::string> parts;
  if (min) parts.push_back(">= " + format_number(*min, 6));
  if (max) parts.push_back("<= " + format_number(*max, 6));
  if (max_ratio_to_baseline) parts.push_back("<= " + format_number(*max_ratio_to_baseline, 6) + " x baseline");
  if (growth)
    parts.push_back(growth->from_table ? std::string("<= the stage table's growth bound")
                                       : "<= " + format_number(growth->floor, 6) + " + " +
                                             format_number(growth->factor, 6) + " x inputs");
  std::string s;
  for (size_t i = 0; i < parts.size(); ++i) s += (i ? " and " : "") + parts[i];
  return s;
}

nlohmann::json GateRule::to_json() const {
  nlohmann::json j{{"id", id}, {"metric", metric}, {"against", against}};
  if (min) j["min"] = *min;
  if (max) j["max"] = *max;
  if (max_ratio_to_baseline) j["max_ratio_to_baseline"] = *max_ratio_to_baseline;
  if (growth) j["growth"] = growth->to_json();
  if (is_speed()) j["confidence"] = confidence;
  if (optional) j["optional"] = true;
  if (!tensor.empty()) j["tensor"] = tensor;
  if (!description.empty()) j["description"] = description;
  return j;
}

nlohmann::json GrowthBound::to_json() const {
  if (from_table) return "table";
  return {{"floor", floor}, {"factor", factor}, {"rounding", rounding}};
}

nlohmann::json GateFile::to_json() const {
  nlohmann::json j{{"schema", kGateSchema}, {"name", name}, {"baseline", baseline},
                   {"tensor", tensor},      {"source", source}};
  if (!description.empty()) j["description"] = description;
  if (time_emulations) j["time_emulations"] = true;
  j["rules"] = nlohmann::json::array();
  for (const auto& r : rules) j["rules"].push_back(r.to_json());
  return j;
}

GateFile parse_gate(const std::string& text, const std::string& where) {
  const auto j = json_input::parse(text, where);
  json_input::ObjectReader r(j, where, "");
  r.allow_only({"schema", "name", "description", "baseline", "tensor", "time_emulations", "rules"});
  const auto schema = r.req_string("schema");
  if (schema != kGateSchema)
    r.fail("schema", "expected \"" + std::string(kGateSchema) + "\", got \"" + schema + "\"");
  GateFile g;
  g.source = where;
  g.name = r.req_string("name");
  if (auto d = r.opt_string("description")) g.description = *d;
  if (auto b = r.opt_string("baseline")) {
    if (b->empty()) r.fail("baseline", "must not be empty");
    g.baseline = *b;
  }
  if (auto t = r.opt_string("tensor")) {
    const auto& tn = gate_tensor_names();
    if (std::find(tn.begin(), tn.end(), *t) == tn.end())
      r.fail("tensor", "unknown tensor '" + *t + "' (expected attention, stages or a block stage name)");
    g.tensor = *t;
  }
  if (auto t = r.opt_bool("time_emulations")) g.time_emulations = *t;
  const auto& rules = r.req_array("rules");
  if (rules.empty()) r.fail("rules", "must hold at least one rule");
  std::set<std::string> ids;
  for (size_t i = 0; i < rules.size(); ++i) {
    const auto path = json_input::index("rules", i);
    GateRule rule = parse_rule(rules[i], where, path);
    if (rule.id == "zero_guard" || rule.id == "finite_guard" || rule.id == "run")
      throw InputError(where + ": " + path + ".id: '" + rule.id +
                       "' is reserved for a built-in check");
    if (!ids.insert(rule.id).second)
      throw InputError(where + ": " + path + ".id: duplicate rule id '" + rule.id + "'");
    g.rules.push_back(std::move(rule));
  }
  r.finish();
  return g;
}

const std::vector<std::string>& builtin_gate_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (const auto& b : kBuiltin) v.emplace_back(b.first);
    return v;
  }();
  return names;
}

const std::string& builtin_gate_text(const std::string& name) {
  static const std::map<std::string, std::string> texts = [] {
    std::map<std::string, std::string> m;
    for (const auto& b : kBuiltin) m.emplace(b.first, b.second);
    return m;
  }();
  auto it = texts.find(name);
  if (it == texts.end())
    throw InputError("unknown gate '" + printable(name) + "' (" + did_you_mean(name, builtin_gate_names()) +
                     "built-ins: " + join_names(builtin_gate_names()) +
                     "; a gate file is named by a path with a '/' or ending in .json)");
  return it->second;
}

bool names_gate_file(const std::string& arg) {
  return arg.find('/') != std::string::npos ||
         (arg.size() >= 5 && arg.compare(arg.size() - 5, 5, ".json") == 0);
}

GateFile load_gate(const std::string& path_or_name) {
  // A bare word is a built-in, whatever files the working folder holds: a
  // file named sage_compat must not silently replace the shipped gate.
  if (!names_gate_file(path_or_name))
    return parse_gate(builtin_gate_text(path_or_name), "builtin:" + path_or_name);
  return parse_gate(json_input::read_text(path_or_name), path_or_name);
}

}  // namespace ts
