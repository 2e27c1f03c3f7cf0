// What bit_exact and sparse_acceptance catch and what they cannot, on the
// synthesized `ci` fixture (gates/README.md "What each shipped gate catches").
#include "calibration_support.hpp"
#include "catch.hpp"
#include "reference/numerics/convert.hpp"
#include "reference/sage2_presets.hpp"

using namespace ts;
using namespace ts::calib;

namespace {

// bit_exact and sparse_acceptance share the baseline "sage2".
const GateInputs& ci_for(const GateFile& g) {
  static const GateInputs in = gate_inputs(synth_ci().problem, g.baseline);
  REQUIRE(g.baseline == "sage2");
  return in;
}

Verdict verdict_of(const GateFile& g, const GateInputs& in, const std::string& spec) {
  return judge_output(g, in, spec, run_backend(in, spec)).verdict;
}

// The ci inputs with every key channel centred per head (the mean over
// tokens subtracted, in bf16): keys that carry no channel bias, where K
// smoothing has (almost) nothing to remove.
struct BiasFreeKeys {
  Tensor k;
  AttentionProblem problem;
};
const BiasFreeKeys& bias_free_keys() {
  static const BiasFreeKeys b = [] {
    BiasFreeKeys x;
    const AttentionProblem& p = synth_ci().problem;
    x.k = synth_ci().syn.dataset("/attention/k");
    const int64_t S = p.q.S, H = p.q.H, D = p.q.D;
    for (int64_t h = 0; h < H; ++h)
      for (int64_t d = 0; d < D; ++d) {
        double mean = 0;
        for (int64_t s = 0; s < S; ++s) mean += x.k.data[static_cast<size_t>((s * H + h) * D + d)];
        mean /= static_cast<double>(S);
        for (int64_t s = 0; s < S; ++s) {
          double& v = x.k.data[static_cast<size_t>((s * H + h) * D + d)];
          v = num::bf16_round(static_cast<float>(v - mean));
        }
      }
    x.problem = p;
    x.problem.k = BSHDView::of(x.k);
    return x;
  }();
  return b;
}

}  // namespace

TEST_CASE("bit_exact: only the baseline's own bits pass") {
  const GateFile g = load_gate("bit_exact");
  const GateInputs& in = ci_for(g);
  const std::string base = sage2_default_spec();
  CHECK(verdict_of(g, in, base) == Verdict::accept);
  // Every other preset that shares the baseline's kernel configuration gives
  // its bits; the others are different kernels.
  for (const auto& p : sage2_presets()) {
    const std::string spec = std::string("sage2:preset=") + p.name;
    nlohmann::json a = sage2_params(p.config), b = sage2_params(sage2_default_preset().config);
    a.erase("preset");
    b.erase("preset");
    INFO(spec);
    CHECK(verdict_of(g, in, spec) == (a == b ? Verdict::accept : Verdict::reject));
  }
  // exact writes float64, sage2 bf16: no bits in common to compare, which
  // bit_exact refuses to judge rather than rejecting.
  CHECK_THROWS_WITH(verdict_of(g, in, "exact"),
                    Catch::Contains("the candidate 'exact' is stored as float64 and the baseline as bfloat16"));
  CHECK(verdict_of(g, in, base + ",smooth_k=off") == Verdict::reject);
}

TEST_CASE("K smoothing skipped: invisible to sage_compat, caught by bit_exact") {
  // On keys without channel bias smoothing has nothing to remove; on the ci
  // fixture's keys (with the synthesized bias) INT8 K still keeps enough
  // range at D = 128 that the output error does not grow. Either way it is a
  // question of bit compatibility, not of accuracy.
  const GateFile compat = load_gate("sage_compat"), bits = load_gate("bit_exact");
  const std::string skipped = sage2_default_spec() + ",smooth_k=off";
  for (const AttentionProblem* p : {&synth_ci().problem, &bias_free_keys().problem}) {
    const GateInputs in = gate_inputs(*p, compat.baseline);
    const Tensor out = run_backend(in, skipped);
    const CandidateVerdict c = judge_output(compat, in, skipped, out);
    INFO((p == &synth_ci().problem ? "ci keys" : "bias-free keys") << ": sage_compat failed " << join(failed_rules(c)));
    CHECK(c.verdict == Verdict::accept);
    const CandidateVerdict b = judge_output(bits, in, skipped, out);
    CHECK(b.verdict == Verdict::reject);
    CHECK(failed_rules(b) == std::vector<std::string>{"bit_exact"});
  }
}

TEST_CASE("sparse_acceptance: accuracy alone never ACCEPTs, and its one accuracy rule is coarse") {
  const GateFile g = load_gate("sparse_acceptance");
  const GateInputs& in = ci_for(g);
  // No timing: its speed rule is required, so the verdict waits for one.
  const CandidateVerdict v = judge_output(g, in, "exact", run_backend(in, "exact"));
  CHECK(v.verdict == Verdict::inconclusive);
  // The routed sol at tau 1.3 fails sage_like, the seed's own finding.
  const CandidateVerdict sol = judge_output(g, in, "sol:tau=1.3", run_backend(in, "sol:tau=1.3"));
  CHECK(sol.verdict == Verdict::reject);
  CHECK(failed_rules(sol) == std::vector<std::string>{"sage_like"});
}
