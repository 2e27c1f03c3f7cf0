#pragma once
// Schedules judged as a whole (touchstone chain, touchstone policy; docs/chain.md):
// each schedule is one case of the one loop (run_cases), whose evidence is its
// chain's final block output at the last step against the baseline stack's and
// the exact stack's (tensor "output"), and its summed attention time paired by
// cell with the baseline's. The verdict is the gate's, like every other.
#include <optional>
#include <string>
#include <vector>

#include "drivers/chain.hpp"
#include "drivers/run_cases.hpp"

namespace ts {

struct ChainJudgeOptions {
  std::string gate = "chain_sage_like";
  bool accuracy_only = false;
  uint64_t seed = 1;
  std::string command = "chain";
};

struct ChainJudgement {
  ChainRun chain;
  CaseRun cases;  // one case per schedule, in order
  // Whether the speed of a schedule can be a speed verdict: no emulation on
  // either side (or the gate times emulations). Else the time is shown, flagged.
  std::vector<bool> time_is_real;
  // Whether it is a kernel's time too: no emulation on either side. time_is_real without it is an
  // emulation's time judged because the gate sets time_emulations.
  std::vector<bool> time_is_kernel;
  // What a schedule's summed attention time is, in words (JSON time_note, the terminal, the page).
  std::string time_note(size_t i) const;
  std::vector<size_t> frontier;  // indices on the work/time-vs-error frontier, fastest first
  std::vector<size_t> ranked;    // every schedule, cheapest first by the cost the choice used (ties: more
                                 // accurate first), those that did not finish last
  std::optional<size_t> chosen;  // the fastest ACCEPTed schedule
  bool search = false;           // touchstone policy (exit 0 when one is chosen)
  int exit_code() const;
};  // its terminal table, HTML page and JSON: report/chain_report.hpp

// The schedules of `touchstone policy`: "dense if step<k; BACKEND:tau=T[,precision=P]" for
// k = 0 .. steps - 1 and every tau, and the all-dense schedule.
std::vector<std::string> policy_schedules(int steps, const std::vector<double>& taus, const std::string& backend,
                                          const std::string& precision);

ChainJudgement judge_chains(const ChainSet& set, const std::vector<Schedule>& schedules, const ChainOptions& opts,
                            const ChainJudgeOptions& jo);

}  // namespace ts
