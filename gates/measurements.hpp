#pragma once
// touchstone.measurements/1: figures measured elsewhere (an imported
// benchmark report, a GPU run) that `touchstone gate --measurements` judges.
// Format: gates/README.md.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "gates/gate_file.hpp"
#include "gates/verdict.hpp"

namespace ts {

inline constexpr const char* kMeasurementsSchema = "touchstone.measurements/1";

struct Measurement {
  std::string backend;     // normalised backend name
  std::string quantity;    // a timed component ("attention", "total", ...) or a metric name
  double value = 0;
  std::string unit;        // "ms" or "s" for timings, "" for metrics
  std::string level;       // sampling, sampling_stage, block, attention_internal, attention_variant, quality, ...
  std::string provenance;  // where the figure came from (report file and JSON path)
  std::string against;     // metrics only: the backend compared against, or "exact"
  std::string tensor = "attention";  // metrics only: which output was compared
  std::string statistic;   // "p50", "single", ...
  std::string raw_backend; // the backend's name as the source spelt it
  std::vector<double> samples;  // optional per-run values (timings: ms or s as `unit`)

  bool is_metric() const;
  nlohmann::json to_json() const;
};

struct MeasurementsFile {
  std::string source;
  nlohmann::json context = nlohmann::json::object();
  std::vector<std::string> notes;
  std::vector<Measurement> entries;

  nlohmann::json to_json() const;
  std::vector<std::string> backends() const;  // in order of first appearance
};

// sampling, sampling_stage, block, attention_variant, attention_internal
// (timings) and quality (metrics): the levels a measurement may have.
const std::vector<std::string>& measurement_levels();

MeasurementsFile parse_measurements(const std::string& text, const std::string& where);
MeasurementsFile load_measurements(const std::string& path);

// The timing levels that decide a gate's tensor, first match wins (README):
// "attention": block "attention" p50, then the attention variant's own p50,
// then the attention internals' total; a block stage: its block component;
// "stages": the block's module_forward.
struct TimingSource {
  std::string level;
  std::vector<std::string> quantities;  // alternatives, first present wins
};
std::vector<TimingSource> timing_precedence(const std::string& tensor);

// Resolves the gate's baseline spec ("sage2:preset=NAME") to a backend of
// the file: exact name first, then the spec's kind ("sage2"). InputError if none.
std::string resolve_measured_baseline(const MeasurementsFile& m, const std::string& baseline_spec);

// Evidence for one candidate from the measurements, for `gate`.
Evidence evidence_from_measurements(const MeasurementsFile& m, const GateFile& gate,
                                    const std::string& baseline, const std::string& candidate,
                                    uint64_t seed);

}  // namespace ts
