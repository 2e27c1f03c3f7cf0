#pragma once
// The rule engine's tests judge hand-made evidence without the case loop: the one other
// holder of judge()'s key (gates/verdict.hpp).
#include <string>

#include "gates/verdict.hpp"

namespace ts {

struct RuleEngineTests {
  static CandidateVerdict judge(const GateFile& gate, const Evidence& evidence, const std::string& repro) {
    return ts::judge(gate, evidence, repro, JudgeKey());
  }
};

// judge() as the rule engine's tests call it.
inline CandidateVerdict judge_for_test(const GateFile& gate, const Evidence& evidence, const std::string& repro) {
  return RuleEngineTests::judge(gate, evidence, repro);
}

}  // namespace ts
