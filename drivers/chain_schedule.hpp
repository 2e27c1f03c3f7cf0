#pragma once
// A schedule (docs/chain.md "Schedules"): which attention backend each block of
// each denoising step runs. Text form, rules separated by ';', the first rule
// whose conditions hold wins:
//   SPEC [if COND [and COND ...]]
//   COND: step<K | step>=K | step=A | step=A-B | block<K | block>=K | block=A | block=A-B
// SPEC is a backend spec, or `dense` for the baseline's spec. Examples:
//   sol:tau=1.3                                   every block of every step
//   dense if step<2; sol:tau=1.3                  dense for steps < 2, sparse after
//   dense if step<1; sol:tau=2 if block>=4; sol:tau=1.3    tau per block
#include <string>
#include <vector>

namespace ts {

struct ScheduleRule {
  std::string spec;  // "dense" resolved to the baseline's spec
  // Half-open ranges [lo, hi); hi < 0: unbounded.
  int step_lo = 0, step_hi = -1, block_lo = 0, block_hi = -1;
  bool matches(int block, int step) const;
};

struct Schedule {
  std::string text;  // as given
  std::vector<ScheduleRule> rules;
  // The spec of the first rule that holds; InputError when none does.
  const std::string& at(int block, int step) const;
  // Every cell of blocks x steps is covered (InputError naming the first one not).
  void check_covers(int blocks, int steps) const;
  std::vector<std::string> specs() const;  // distinct specs, in rule order
};

// InputError naming the rule and what is wrong.
Schedule parse_schedule(const std::string& text, const std::string& dense_spec);

}  // namespace ts
