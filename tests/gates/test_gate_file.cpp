// Gate files: the shipped ones parse, and every malformed file is an
// InputError naming the JSON path.
#include <string>

#include "catch.hpp"
#include "core/error.hpp"
#include "gates/gate_file.hpp"

using namespace ts;

namespace {
std::string error_of(const std::string& text) {
  try {
    parse_gate(text, "g.json");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}
const std::string kHead = R"("schema": "touchstone.gate/1", "name": "t", )";
}  // namespace

TEST_CASE("a built-in gate's name in reports is the name --gate takes") {
  // Reports, messages and history print the gate's name; the user types it
  // back into --gate, history --gate or a batch plan.
  for (const auto& n : builtin_gate_names()) CHECK(load_gate(n).name == n);
}

TEST_CASE("the shipped gates are built in and parse") {
  for (const auto& n : {"sparse_acceptance", "sage_compat", "bit_exact"}) {
    const GateFile g = load_gate(n);
    CHECK(g.source == std::string("builtin:") + n);
    CHECK_FALSE(g.rules.empty());
  }
  const GateFile g = load_gate("sparse_acceptance");
  CHECK(g.name == "sparse_acceptance");
  CHECK(g.baseline == "sage2");
  CHECK(g.tensor == "attention");
  REQUIRE(g.rules.size() == 2);
  CHECK(g.rules[0].id == "sage_like");
  CHECK(*g.rules[0].max == 0.05);
  CHECK(g.rules[1].is_speed());
  CHECK(*g.rules[1].min == 1.0);
  CHECK(g.rules[1].confidence == 0.98);  // at most 1 % false "faster" per A/A pair (gates/README.md "Timing runs")
  // The built-in text is the file in the tree.
  const GateFile f = load_gate(std::string(TOUCHSTONE_SOURCE_DIR) + "/gates/sparse_acceptance.json");
  CHECK(f.to_json()["rules"] == g.to_json()["rules"]);
  REQUIRE_THROWS_AS(load_gate("no_such_gate"), InputError);
}

TEST_CASE("gate rules may name the breakdown figures") {
  const GateFile g = parse_gate("{" + kHead + R"("rules": [
      {"id": "h", "metric": "rel_l2_worst_head", "against": "exact", "max_ratio_to_baseline": 1.5},
      {"id": "g", "metric": "gain_error_worst_head", "against": "exact", "max": 0.01}]})",
                                "g.json");
  REQUIRE(g.rules.size() == 2);
  CHECK(g.rules[0].metric == "rel_l2_worst_head");
  CHECK(error_of("{" + kHead + R"("rules": [{"id": "a", "metric": "rel_l2_worst_token", "max": 1}]})")
            .find("rel_l2_worst_head") != std::string::npos);  // the list of names says what exists
}

TEST_CASE("malformed gate files name the JSON path") {
  CHECK(error_of(R"({"schema": "touchstone.gate/1", "name": "t", "rules": [{"id": "a", "metric": "rel_l2", "max": "0.05"}]})") ==
        "g.json: rules[0].max: expected a number, got string");
  CHECK(error_of("{" + kHead + R"("rules": [{"id": "a", "metric": "rel_l2", "max": 1}, {"id": "b", "metric": "rel_l2", "maxx": 1}]})") ==
        "g.json: rules[1].maxx: unknown key (did you mean 'max'? keys: id, metric, against, min, max, "
        "max_ratio_to_baseline, growth, confidence, optional, tensor, description)");
  CHECK(error_of("{" + kHead + R"("rules": [{"id": "a", "metric": "rel_l2", "max": 1, "maxx": 1}]})") ==
        "g.json: rules[0].maxx: unknown key (did you mean 'max'? keys: id, metric, against, min, max, "
        "max_ratio_to_baseline, growth, confidence, optional, tensor, description)");
  CHECK(error_of("{" + kHead + R"("extra": 1, "rules": [{"id": "a", "metric": "rel_l2", "max": 1}]})") ==
        "g.json: extra: unknown key (keys: schema, name, description, baseline, tensor, time_emulations, rules)");
  CHECK(error_of("{" + kHead + R"("rules": []})") == "g.json: rules: must hold at least one rule");
  CHECK(error_of("{" + kHead + R"("rules": {}})") == "g.json: rules: expected an array, got object");
  CHECK(error_of("{" + kHead + R"("rules": [{"id": "a", "metric": "l2", "max": 1}]})").rfind(
            "g.json: rules[0].metric: unknown metric 'l2'", 0) == 0);
  CHECK(error_of("{" + kHead + R"("rules": [{"id": "a", "metric": "rel_l2", "max": 1}, {"id": "a", "metric": "cosine", "min": 1}]})") ==
        "g.json: rules[1].id: duplicate rule id 'a'");
  CHECK(error_of("{" + kHead + R"("rules": [{"id": "a", "metric": "rel_l2", "max": 1, "optional": 1}]})") ==
        "g.json: rules[0].optional: expected true or false, got number");
  CHECK(error_of("{" + kHead + R"("rules": [{"id": "a", "metric": "speedup", "against": "exact", "min": 1}]})") ==
        "g.json: rules[0].against: speedup is measured against the baseline only");
  CHECK(error_of("{" + kHead + R"("rules": [{"id": "a", "metric": "rel_l2", "max_ratio_to_baseline": 2}]})").rfind(
            "g.json: rules[0].max_ratio_to_baseline: needs", 0) == 0);
  CHECK(error_of("{" + kHead + R"("rules": [{"id": "a", "metric": "rel_l2", "max": 1, "confidence": 0.9}]})") ==
        "g.json: rules[0].confidence: only a speedup rule has a confidence");
  CHECK(error_of("{" + kHead + R"("rules": [{"id": "a", "metric": "speedup", "min": 1, "confidence": 1.5}]})").rfind(
            "g.json: rules[0].confidence:", 0) == 0);
  CHECK(error_of("{" + kHead + R"("tensor": "mlp", "rules": [{"id": "a", "metric": "rel_l2", "max": 1}]})").rfind(
            "g.json: tensor: unknown tensor 'mlp'", 0) == 0);
  CHECK(error_of("{" + kHead + R"("rules": [{"id": "zero_guard", "metric": "rel_l2", "max": 1}]})").rfind(
            "g.json: rules[0].id: 'zero_guard' is reserved", 0) == 0);
  CHECK(error_of(R"({"schema": "touchstone.gate/2", "name": "t", "rules": [{"id": "a", "metric": "rel_l2", "max": 1}]})") ==
        "g.json: schema: expected \"touchstone.gate/1\", got \"touchstone.gate/2\"");
  CHECK(error_of(R"({"name": "t", "rules": [{"id": "a", "metric": "rel_l2", "max": 1}]})") == "g.json: schema: missing");
  CHECK(error_of(R"({"schema": "touchstone.gate/1", "name": "t", "name": "u", "rules": []})") ==
        "g.json: duplicate key 'name'");
  CHECK(error_of("{\n  \"schema\": \"touchstone.gate/1\",\n  \"name\": ,\n}").rfind(
            "g.json: invalid JSON at line 3, column", 0) == 0);
  CHECK(error_of("[1, 2]") == "g.json: top level: expected an object, got array");
  REQUIRE_THROWS_AS(load_gate("/nonexistent/gate.json"), InputError);
}

TEST_CASE("a rule may name its own tensor, and bounds print") {
  const GateFile g = parse_gate("{" + kHead + R"("tensor": "stages", "description": "d", "rules": [
      {"id": "fc1_close", "metric": "rel_l2", "against": "exact", "tensor": "fc1", "max": 0.01, "min": 0},
      {"id": "ratio", "metric": "rmse", "against": "exact", "max_ratio_to_baseline": 2}]})",
                                "g.json");
  CHECK(g.tensor_of(g.rules[0]) == "fc1");
  CHECK(g.tensor_of(g.rules[1]) == "stages");
  CHECK(g.rules[0].bound_text() == ">= 0 and <= 0.01");
  CHECK(g.rules[1].bound_text() == "<= 2 x baseline");
  CHECK(g.description == "d");
}

TEST_CASE("a growth rule parses, round-trips and refuses what it cannot mean") {
  const ts::GateFile g = ts::parse_gate("{" + kHead + R"("tensor": "stages", "rules": [
      {"id": "t", "metric": "rel_l2", "growth": "table"},
      {"id": "e", "metric": "rel_l2", "growth": {"floor": 1e-3, "factor": 2, "rounding": false}}]})", "g.json");
  REQUIRE(g.rules[0].growth);
  CHECK(g.rules[0].growth->from_table);
  CHECK(g.rules[1].growth->factor == 2);
  CHECK_FALSE(g.rules[1].growth->rounding);
  CHECK(ts::parse_gate("{" + kHead + "\"rules\": [" + g.rules[1].to_json().dump() + "]}", "rt").rules[0].to_json() ==
        g.rules[1].to_json());
  CHECK(error_of("{" + kHead + R"("rules": [{"id": "a", "metric": "cosine", "growth": "table"}]})")
            .find("not meaningful for cosine") != std::string::npos);
  CHECK(error_of("{" + kHead + R"("rules": [{"id": "a", "metric": "rel_l2", "growth": "tabel"}]})")
            .find("expected \"table\"") != std::string::npos);
  CHECK(error_of("{" + kHead + R"("rules": [{"id": "a", "metric": "rel_l2", "growth": {"floor": 1}}]})")
            .find("needs both floor and factor") != std::string::npos);
  // The shipped stage gates are built in.
  CHECK(ts::load_gate("stages-default").rules[1].growth->from_table);
}

TEST_CASE("a gate argument is a file only when it names a path; an unknown name lists the built-ins") {
  CHECK(ts::names_gate_file("./sage_compat"));
  CHECK(ts::names_gate_file("gates/x.json"));
  CHECK(ts::names_gate_file("x.json"));
  CHECK_FALSE(ts::names_gate_file("sage_compat"));
  CHECK_FALSE(ts::names_gate_file("my_gate"));
  CHECK(ts::load_gate("sage_compat").source == "builtin:sage_compat");
  try {
    ts::load_gate("sage_compt");
    FAIL("no error");
  } catch (const ts::InputError& e) {
    const std::string m = e.what();
    CHECK(m.find("unknown gate 'sage_compt' (did you mean 'sage_compat'? built-ins: sparse_acceptance, sage_compat") == 0);
    CHECK(m.find('\n') == std::string::npos);
  }
  CHECK_THROWS_WITH(ts::load_gate("/nonexistent/g.json"), Catch::Contains("/nonexistent/g.json"));
}
