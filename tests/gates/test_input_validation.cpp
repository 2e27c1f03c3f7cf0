// Data that parses but cannot be right is refused where it is read: figures
// a metric cannot take, bounds outside a metric's range, timing sections of
// the wrong shape, empty names, unknown levels, empty samples (README:
// "Ranges and what is refused"). Large files are read in linear time.
#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "catch.hpp"
#include "core/error.hpp"
#include "gates/gate_file.hpp"
#include "gates/import_report.hpp"
#include "gates/measurements.hpp"

using namespace ts;

namespace {
std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}
std::string gate_error(const std::string& rule) {
  return error_of([&] {
    parse_gate(R"({"schema": "touchstone.gate/1", "name": "g", "rules": [)" + rule + "]}", "g.json");
  });
}
std::string meas_error(const std::string& entry) {
  return error_of([&] {
    parse_measurements(R"({"schema": "touchstone.measurements/1", "entries": [)" + entry + "]}", "m.json");
  });
}
std::string report_error(const std::string& text) {
  return error_of([&] { import_report(text, "r.json"); });
}
const std::string kMetric = R"("backend": "k", "quantity": "rel_l2", "against": "sage2", "unit": "", "level": "quality", "provenance": "p")";
const std::string kTiming = R"("backend": "k", "quantity": "attention", "value": 5, "unit": "ms", "provenance": "p")";
double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}
}  // namespace

TEST_CASE("gate bounds outside the metric's range are refused; at its ends they are kept") {
  CHECK(gate_error(R"({"id": "a", "metric": "rel_l2", "max": -1})") ==
        "g.json: rules[0].max: max -1 can never pass (rel_l2 is always in [0, inf))");
  CHECK(gate_error(R"({"id": "a", "metric": "rel_l2", "min": -5})") ==
        "g.json: rules[0].min: min -5 can never fail (rel_l2 is always in [0, inf))");
  CHECK(gate_error(R"({"id": "a", "metric": "cosine", "min": 2})") ==
        "g.json: rules[0].min: min 2 can never pass (cosine is always in [-1, 1])");
  CHECK(gate_error(R"({"id": "a", "metric": "identical_fraction", "max": 1.5})") ==
        "g.json: rules[0].max: max 1.5 can never fail (identical_fraction is always in [0, 1])");
  CHECK(gate_error(R"({"id": "a", "metric": "speedup", "min": 0})") ==
        "g.json: rules[0].min: min 0 can never fail (speedup is always in (0, inf))");
  CHECK(gate_error(R"({"id": "a", "metric": "speedup", "max": -2})") ==
        "g.json: rules[0].max: max -2 can never pass (speedup is always in (0, inf))");
  CHECK(gate_error(R"({"id": "a", "metric": "rel_l2", "max": 0})").empty());
  CHECK(gate_error(R"({"id": "a", "metric": "rel_l2", "min": 0, "max": 0.1})").empty());
  CHECK(gate_error(R"({"id": "a", "metric": "cosine", "min": -1, "max": 1})").empty());
  CHECK(gate_error(R"({"id": "a", "metric": "identical_fraction", "min": 1})").empty());
}

TEST_CASE("measurements: impossible figures, unknown levels, empty samples are refused") {
  CHECK(meas_error("{" + kMetric + R"(, "value": -0.5})") ==
        "m.json: entries[0].value: rel_l2 -0.5 is impossible (rel_l2 is always in [0, inf))");
  CHECK(meas_error(R"({"backend": "k", "quantity": "cosine", "against": "exact", "unit": "", "level": "quality", "provenance": "p", "value": 1.5})") ==
        "m.json: entries[0].value: cosine 1.5 is impossible (cosine is always in [-1, 1])");
  CHECK(meas_error("{" + kTiming + R"(, "level": "galaxy"})") ==
        "m.json: entries[0].level: unknown timing level 'galaxy' (expected sampling, sampling_stage, block, "
        "attention_variant or attention_internal)");
  CHECK(meas_error("{" + kTiming + R"(, "level": "quality"})").rfind("m.json: entries[0].level: unknown timing level 'quality'", 0) == 0);
  CHECK(meas_error(R"({"backend": "k", "quantity": "rel_l2", "against": "sage2", "unit": "", "level": "block", "provenance": "p", "value": 0.1})") ==
        "m.json: entries[0].level: a metric's level is \"quality\", got \"block\"");
  CHECK(meas_error("{" + kTiming + R"(, "level": "block", "samples": []})") ==
        "m.json: entries[0].samples: must hold at least one sample (leave the key out when there are none)");
  CHECK(meas_error("{" + kMetric + R"(, "value": 0.1, "samples": [0.1]})") ==
        "m.json: entries[0].samples: only timings have per-run samples");
  CHECK(meas_error(R"({"backend": "", "quantity": "attention", "value": 5, "unit": "ms", "level": "block", "provenance": "p"})") ==
        "m.json: entries[0].backend: must not be empty");
  CHECK(meas_error(R"({"backend": "k", "quantity": "rel_l2", "against": "", "unit": "", "level": "quality", "provenance": "p", "value": 0.1})") ==
        "m.json: entries[0].against: must not be empty");
  CHECK(meas_error("{" + kMetric + R"(, "value": 0.1, "tensor": "mlp"})").rfind("m.json: entries[0].tensor: unknown tensor 'mlp'", 0) == 0);
  CHECK(meas_error("{" + kMetric + R"(, "value": 0})").empty());
  CHECK(meas_error("{" + kTiming + R"(, "level": "block", "samples": [5, 5.1]})").empty());
}

TEST_CASE("import: timing sections of the wrong shape, string figures, impossible figures, empty names") {
  const std::string ok = R"("representative_block_24_p50_milliseconds": {"sage2": {"attention": 10}})";
  CHECK(report_error(R"({"representative_block_24_p50_milliseconds": [1, 2]})") ==
        "r.json: representative_block_24_p50_milliseconds: a timing section is an object ({backend: number} or "
        "{backend: {quantity: number}}), got array");
  CHECK(report_error(R"({"sampling_uninstrumented_two_step_seconds": 5, )" + ok + "}") ==
        "r.json: sampling_uninstrumented_two_step_seconds: a timing section is an object ({backend: number} or "
        "{backend: {quantity: number}}), got number");
  CHECK(report_error("{" + ok + R"(, "quality_gates": {"k_relative_l2_vs_sage2": "0.5"}})") ==
        "r.json: quality_gates.k_relative_l2_vs_sage2: expected a number, got string");
  CHECK(report_error("{" + ok + R"(, "quality_gates": {"k_p50_milliseconds": "5"}})") ==
        "r.json: quality_gates.k_p50_milliseconds: expected a number, got string");
  CHECK(report_error("{" + ok + R"(, "quality_gates": {"k_relative_l2_vs_sage2": -0.01}})") ==
        "r.json: quality_gates.k_relative_l2_vs_sage2: rel_l2 -0.01 is impossible (rel_l2 is always in [0, inf))");
  CHECK(report_error(R"({"representative_block_24_p50_milliseconds": {"": {"attention": 10}}})") ==
        "r.json: representative_block_24_p50_milliseconds..attention: empty backend name");
  CHECK(report_error(R"({"representative_block_24_p50_milliseconds": {"k": {"": 10}}})") ==
        "r.json: representative_block_24_p50_milliseconds.k.: empty quantity name");
  CHECK(report_error(R"({"warmup_p50_milliseconds": {"k": 10}})") ==
        "r.json: warmup_p50_milliseconds: a timing section at no known level (its name must contain 'block' "
        "or 'attention_internal', or start with 'sampling')");
  // (A report's sections are read in key order.)
  CHECK(report_error("{" + ok + R"(, "block_b_p50_milliseconds": {"sage2": {"attention": 11}}})") ==
        "r.json: representative_block_24_p50_milliseconds.sage2.attention: duplicate measurement of attention "
        "(block) for backend 'sage2' (also r.json: block_b_p50_milliseconds.sage2.attention)");
  // Prose in a quality section stays a note; a long key is no problem.
  const auto m = import_report("{" + ok + R"(, "quality_gates": {"conclusion": "fine", ")" + std::string(200000, 'k') +
                                   R"(_relative_l2_vs_sage2": 0.1}})",
                               "r.json");
  CHECK(m.notes.size() == 1);
  REQUIRE(m.entries.size() == 2);
  CHECK(m.backends() == std::vector<std::string>{std::string(200000, 'k'), "sage2"});
}

TEST_CASE("what import-report writes, gate --measurements reads") {
  const auto m = import_report_file(std::string(TOUCHSTONE_SOURCE_DIR) + "/tests/gates/data/gb10_sage2_vs_sol_block24.json");
  const auto back = parse_measurements(m.to_json().dump(), "m.json");
  CHECK(back.entries.size() == m.entries.size());
}

TEST_CASE("large gate, measurements and report files are read in linear time") {
  // 100 000 rules, and a report and a measurements file of 100 000 backends:
  // quadratic reading took minutes at this size.
  std::string rules;
  for (int i = 0; i < 100000; ++i)
    rules += std::string(i ? "," : "") + R"({"id": "r)" + std::to_string(i) + R"(", "metric": "rel_l2", "max": 0.1})";
  auto t0 = std::chrono::steady_clock::now();
  const GateFile g = parse_gate(R"({"schema": "touchstone.gate/1", "name": "big", "rules": [)" + rules + "]}", "big.json");
  const double gate_s = seconds_since(t0);
  CHECK(g.rules.size() == 100000);

  std::string section;
  for (int i = 0; i < 100000; ++i) section += std::string(i ? "," : "") + "\"b" + std::to_string(i) + "\": {\"attention\": 5}";
  t0 = std::chrono::steady_clock::now();
  const MeasurementsFile m = import_report(R"({"representative_block_24_p50_milliseconds": {)" + section + "}}", "big.json");
  const auto names = m.backends();
  const MeasurementsFile back = parse_measurements(m.to_json().dump(), "big.measurements.json");
  const double report_s = seconds_since(t0);
  CHECK(names.size() == 100000);
  CHECK(back.entries.size() == 100000);
  INFO("gate " << gate_s << " s, report " << report_s << " s");
  // Seconds, not minutes, even in the sanitizer build on a loaded machine.
  CHECK(gate_s < 60);
  CHECK(report_s < 60);
}
