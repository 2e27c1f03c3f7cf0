#pragma once
// touchstone triage F --candidate X [--baseline B] [--exact E] [--against Y]
// (docs/triage.md): from a verdict to its cause. Where the candidate's error
// against exact lies (worst elements with coordinates, non-finite runs, 2-D
// maps of rel_l2 and gain against the baseline's own maps as the noise
// floor), what it is made of when touchstone can emulate the candidate (sol:
// quantisation + routing + summary compensation; sage2: one quantiser off at
// a time), how it differs from another version (--against), which block
// stage first leaves its bound, and the commands that reproduce it on a slice.
#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>

namespace ts {

struct TriageOptions {
  std::string candidate;      // a backend spec, as in `gate`
  std::string baseline;       // "" = the default sage2 preset
  std::string exact = "auto";  // drivers/run_estimate.hpp choose_exact
  std::string against;        // "" = no A/B diff
  size_t top = 10;            // worst elements and cells listed
  bool decompose = true;      // run the emulation's variants (sol, sage2)
  bool allow_slow = false;
  std::string fixture_arg;    // F as the user gave it, for the repro lines ("" = the path)
};

// Bad specs, fixture or options -> InputError before any backend runs.
// The report (schema touchstone.triage/1) as JSON: every figure the text and
// the page show.
nlohmann::json run_triage(const std::string& fixture, const TriageOptions& opts);

// Its terminal text and HTML page: report/triage_report.hpp.

// The sol or sage2 spec an output was made with, from its `params` attribute
// (docs/fixture-format.md), or "" when they name neither.
std::string emulation_spec_of(const nlohmann::json& params);

}  // namespace ts
