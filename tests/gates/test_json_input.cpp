// Strict JSON input (gates/json_input): what the DOM parser would accept or
// crash on is an InputError naming the file and the JSON path.
#include <string>

#include "catch.hpp"
#include "core/error.hpp"
#include "core/printable.hpp"
#include "gates/gate_file.hpp"
#include "gates/import_report.hpp"
#include "gates/json_input.hpp"
#include "gates/measurements.hpp"

using namespace ts;

namespace {
std::string parse_error(const std::string& text) {
  try {
    json_input::parse(text, "f.json");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}
std::string nested(size_t n) { return std::string(n, '[') + "1" + std::string(n, ']'); }
}  // namespace

TEST_CASE("json_input: nesting past the limit is refused, naming where") {
  CHECK(parse_error("{\"a\": " + nested(100) + "}").empty());
  std::string path = "a";
  for (int i = 0; i < 127; ++i) path += "[0]";
  CHECK(parse_error("{\"a\": " + nested(200000) + "}") == "f.json: " + path + ": nested deeper than 128 levels");
  std::string objs;
  for (int i = 0; i < 200000; ++i) objs += "{\"k\":";
  CHECK(parse_error(objs + "1" + std::string(200000, '}')).find("nested deeper than 128 levels") !=
        std::string::npos);
}

TEST_CASE("json_input: numbers a double cannot hold are refused, naming the path") {
  CHECK(parse_error(R"({"rules": [{"max": 1e999}]})") == "f.json: rules[0].max: number 1e999 is too large for a double");
  CHECK(parse_error(R"({"a": -1e999})") == "f.json: a: number -1e999 is too large for a double");
  CHECK(parse_error("{\"a\": " + std::string(400, '9') + "}") ==
        "f.json: a: number " + std::string(400, '9') + " is too large for a double");
  CHECK(parse_error(R"({"a": [0, 1e-400]})") == "f.json: a[1]: number 1e-400 is too small for a double (it would read as 0)");
  CHECK(parse_error(R"({"a": -0.000001e-399})") ==
        "f.json: a: number -0.000001e-399 is too small for a double (it would read as 0)");
  // Zero written as zero, and small numbers a double holds, are numbers.
  CHECK(parse_error(R"({"a": [0, 0.0, -0e10, 0e-400, 1e-300, 1e300]})").empty());
}

TEST_CASE("json_input: a key repeated in one object is refused at every depth") {
  CHECK(parse_error(R"({"a": 1, "a": 2})") == "f.json: duplicate key 'a'");
  CHECK(parse_error(R"({"x": [{"a": 1}, {"b": 1, "b": 2}]})") == "f.json: x[1]: duplicate key 'b'");
  CHECK(parse_error(R"({"x": {"a": 1}, "y": {"a": 1}})").empty());
  // The same rule for measurements and reports as for gate files.
  try {
    parse_measurements(R"({"schema": "touchstone.measurements/1", "context": {"d": 1, "d": 2}, "entries": []})", "m.json");
    FAIL("accepted");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()) == "m.json: context: duplicate key 'd'");
  }
  try {
    import_report(R"({"q_quality": {"k_rel_l2_vs_a": 0.1, "k_rel_l2_vs_a": 0.2}})", "r.json");
    FAIL("accepted");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()) == "r.json: q_quality: duplicate key 'k_rel_l2_vs_a'");
  }
}

TEST_CASE("json_input: invalid UTF-8 and control characters are escaped in messages") {
  const std::string e = parse_error("{\"name\": \"g\xff\"}");
  CHECK(e.rfind("f.json: invalid JSON at line 1, column", 0) == 0);
  CHECK(e.find('\xff') == std::string::npos);
  CHECK(e.find("\\xFF") != std::string::npos);
  CHECK(printable("a\nb\x1b[31m\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\xc0\xaf\xed\xa0\x80\xe2\x82") ==
        "a\\nb\\x1B[31m\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\\xC0\\xAF\\xED\\xA0\\x80\\xE2\\x82");
  try {
    parse_gate(R"({"schema": "touchstone.gate/1", "name": "g", "rules": [{"id": "a", "metric": "x\ny", "max": 1}]})",
               "g.json");
    FAIL("accepted");
  } catch (const InputError& e2) {
    CHECK(std::string(e2.what()).find('\n') == std::string::npos);
    CHECK(std::string(e2.what()).find("unknown metric 'x\\ny'") != std::string::npos);
  }
}
