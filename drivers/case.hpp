#pragma once
// One case: what one verdict is about, after benchdnn's problem object (prb_t).
// A case names its input (a fixture, a measurements file, a chain set), its
// baseline and its candidate (parsed backend specs for a fixture's cases), its
// gate, and every run option that can change its verdict; it owns its name and
// its repro line, the one command that reproduces its verdict, printed from
// those fields alone. Every driver (gate, sweep, demo, the stage comparison,
// chain, batch, the Python binding) makes its list of cases through one
// factory, make_cases(), and hands it to run_cases() (drivers/run_cases.hpp),
// the one loop that gathers evidence and calls judge().
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "drivers/speed_evidence.hpp"
#include "kernels_under_test/registry.hpp"

namespace ts {

enum class CaseSource {
  computed,      // the candidate runs here on the fixture's q, k, v (an emulation, a plugin)
  stored,        // stored:NAME: an output a kernel wrote into the fixture elsewhere
  measurements,  // figures of an imported report (touchstone.measurements/1)
  stage,         // one block stage of a stage set against another (compare --stages)
  chain,         // a schedule's block stack over a chain set (touchstone chain / policy)
};
const char* case_source_name(CaseSource s);  // "computed", "stored", "measurements", "stage", "chain"

// The options of a run of cases. Those before `allow_slow` can change a
// verdict (a repro line prints each that is not `touchstone gate`'s default);
// the rest say how the loop runs.
struct CaseOptions : TimingOptions {
  // Speed rules are judged on timings taken here (false: a sweep's --pairs 0,
  // `gate --pairs 0`; two stored sides are still judged on their /timings).
  bool timed = true;
  // Speed rules are left out (CPU CI runners, where time means nothing): every
  // report says so, and the verdict follows accuracy alone.
  bool accuracy_only = false;
  bool allow_nonfinite = false;
  std::string exact = "auto";  // drivers/run_estimate.hpp choose_exact
  bool allow_slow = false;     // no verdict of its own, but without it a repro may refuse to start
  // Per-group figures (worst head, query block, frame) for every case, or only
  // when a rule reads one (a sweep at block24: another pass over 271 M values).
  bool group_figures = true;
  std::string command = "gate";  // names the run in progress lines and refusals
  // Check everything checkable (specs, fixture, gate, slow-run guard) and run
  // nothing: `batch` checks every unit so before its workers start.
  bool check_only = false;

  // Whether two option sets give the same verdicts (every field before allow_slow).
  bool same_verdicts(const CaseOptions& o) const;
};

struct Case {
  CaseSource source = CaseSource::computed;
  std::string input;      // fixture path, the measurements file, a chain set's label
  // What the case names: a backend spec's text (fixture cases), a measured
  // backend's name, a stage set (B) and a stage, a schedule.
  std::string baseline, candidate;
  // Fixture cases: the same specs parsed once (kernels_under_test/registry.hpp);
  // absent where a spec does not parse (its error is bad input when its case is prepared).
  std::optional<BackendSpec> baseline_spec, candidate_spec;
  std::string gate_arg;   // the gate as the user named it (a built-in name or a path)
  // Stage cases: the candidate's stage set (A) and the exact one ("" = none).
  std::string stage_set, exact_set;
  // What a sweep shows beside the verdict (its knob); not judged.
  std::optional<double> tau;
  // Every run option (judged by the one loop; those that change a verdict are in the repro).
  CaseOptions options;
  // Flags of the driver whose own evidence a case is (chain's --exact, --linear, ...),
  // given only where they differ from its defaults; printed in the repro line.
  std::vector<std::pair<std::string, std::string>> driver_flags;

  // A fixture case's source from its candidate spec (stored:NAME or computed).
  static CaseSource source_of(const std::string& candidate_spec);
  // Stable identity within a run: source, input, baseline, candidate.
  std::string id() const;
  // The identity with every option that can change the verdict: two cases of
  // one name give the same verdict.
  std::string name() const;
  // The one command that reproduces this case's verdict and figures, shell-quoted.
  std::string repro() const;
};

// What a driver asks for: one case per candidate, everything else shared.
struct CaseRequest {
  // computed: a fixture's cases, each stored or computed by its candidate's spec.
  CaseSource source = CaseSource::computed;
  std::string input, baseline;
  std::vector<std::string> candidates;
  std::vector<std::optional<double>> taus;  // empty, or one per candidate (a sweep's knob)
  std::string gate_arg;
  std::string stage_set, exact_set;  // stage cases
  CaseOptions options;
  std::vector<std::pair<std::string, std::string>> driver_flags;
};

// THE factory of cases: every driver, batch and the Python binding build theirs here.
std::vector<Case> make_cases(const CaseRequest& r);

// A word for a POSIX shell: as is when plain, else in single quotes.
std::string shell_quote(const std::string& s);

// `touchstone WORDS... --flag value ... --switch ...`, every word shell-quoted:
// every repro line (Case::repro, triage's) is made here. Flags with an empty
// value are left out.
std::string command_line(const std::vector<std::string>& words,
                         const std::vector<std::pair<std::string, std::string>>& flags,
                         const std::vector<std::string>& switches = {});

}  // namespace ts
