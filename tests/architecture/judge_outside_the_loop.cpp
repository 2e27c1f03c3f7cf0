// A driver that judges evidence itself, outside the case loop: gates/verdict.hpp's key makes
// this fail to compile (ctest judge_outside_the_loop expects the compiler to name the key).
// With -DTS_THROUGH_THE_LOOP it judges as the rule engine's tests may, and compiles: the
// failure above is the key's, not a typo's.
#include "gates/verdict.hpp"

#ifdef TS_THROUGH_THE_LOOP
#include "gates/judge_for_tests.hpp"
#endif

namespace ts {

CandidateVerdict judge_by_hand(const GateFile& gate, const Evidence& evidence) {
#ifdef TS_THROUGH_THE_LOOP
  return RuleEngineTests::judge(gate, evidence, "");
#else
  return judge(gate, evidence, "", JudgeKey());
#endif
}

}  // namespace ts
