#pragma once
// One case: what one verdict is about, after benchdnn's problem object. A case
// names its input (a fixture or a measurements file), its baseline and its
// candidate, and where its evidence comes from; it owns its repro line, the one
// command that reproduces its verdict. Every driver (gate, sweep, demo, the
// stage comparison, batch) makes a list of cases and hands it to run_cases()
// (drivers/run_cases.hpp), the one loop that gathers evidence and calls judge().
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace ts {

enum class CaseSource {
  computed,      // the candidate runs here on the fixture's q, k, v (an emulation, a plugin)
  stored,        // stored:NAME: an output a kernel wrote into the fixture elsewhere
  measurements,  // figures of an imported report (touchstone.measurements/1)
  stage,         // one block stage of a stage set against another (compare --stages)
  chain,         // a schedule's block stack over a chain set (touchstone chain / policy)
};
const char* case_source_name(CaseSource s);  // "computed", "stored", "measurements", "stage", "chain"

struct Case {
  CaseSource source = CaseSource::computed;
  std::string input;      // fixture path, or the measurements file
  std::string baseline;   // backend spec; measurements: a backend name; stage: stage set B
  std::string candidate;  // backend spec; measurements: a backend name; stage: the stage name; chain: the schedule
  std::string gate_arg;   // the gate as the user named it (a built-in name or a path)
  // Stage cases: the candidate's stage set (A) and the exact one ("" = none).
  std::string stage_set, exact_set;
  // What a sweep shows beside the verdict (its knob); not judged.
  std::optional<double> tau;

  // A fixture case's source from its candidate spec (stored:NAME or computed).
  static CaseSource source_of(const std::string& candidate_spec);
  // Stable identity within a run: source, input, baseline, candidate.
  std::string id() const;
  // The one command that reproduces this case's verdict, shell-quoted.
  std::string repro() const;
};

// A word for a POSIX shell: as is when plain, else in single quotes.
std::string shell_quote(const std::string& s);

// `touchstone WORDS... --flag value ...`, every word shell-quoted: every repro
// line (Case::repro, triage's) is made here. Flags with an empty value are left out.
std::string command_line(const std::vector<std::string>& words,
                         const std::vector<std::pair<std::string, std::string>>& flags);

}  // namespace ts
