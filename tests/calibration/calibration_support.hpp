#pragma once
// What the calibration tests share: a gate's inputs on one fixture (exact,
// the gate's baseline, made through the registry as `touchstone gate` makes
// them), a bf16 SDPA-like attention as a legitimate candidate, and judging a
// candidate tensor through add_accuracy_evidence + judge(), the code path of
// a gate run (tools/gate_runner.cpp) minus the timing.
#include <Eigen/Dense>
#include <cmath>
#include <memory>
#include <string>

#include "gates/judge_for_tests.hpp"
#include "fixtures/synth.hpp"
#include "gates/accuracy_evidence.hpp"
#include "gates/gate_file.hpp"
#include "gates/verdict.hpp"
#include "kernels_under_test/registry.hpp"
#include "reference/numerics/convert.hpp"
#include "reference/numerics/detmath.hpp"

namespace ts::calib {

// A gate's inputs on one attention problem; the problem's tensors live in
// whatever owns it (a SynthResult or a Fixture) beside this.
struct GateInputs {
  AttentionProblem problem;
  std::string fixture_path;  // for stored:NAME candidates ("" for synthetic inputs)
  Tensor exact, baseline;
  Figures baseline_vs_exact;
};

inline GateInputs gate_inputs(const AttentionProblem& problem, const std::string& baseline_spec,
                              const std::string& fixture_path = "") {
  GateInputs g;
  g.problem = problem;
  g.fixture_path = fixture_path;
  g.exact = make_attention_backend("exact", {fixture_path})->run(problem).out;
  g.baseline = make_attention_backend(baseline_spec, {fixture_path})->run(problem).out;
  g.baseline_vs_exact = accuracy_figures(g.baseline, g.exact, &problem.config);
  return g;
}

inline CandidateVerdict judge_output(const GateFile& gate, const GateInputs& in, const std::string& name,
                                     const Tensor& out) {
  Evidence ev;
  ev.candidate = name;
  add_accuracy_evidence(ev, gate.tensor, out, in.baseline, in.exact, in.baseline_vs_exact, &in.problem.config);
  return judge_for_test(gate, ev, "");
}

inline Tensor run_backend(const GateInputs& in, const std::string& spec) {
  return make_attention_backend(spec, {in.fixture_path})->run(in.problem).out;
}

// The synthesized `ci` fixture of docs/emulation.md's measured bands (seed 1).
struct SynthCi {
  SynthResult syn;
  AttentionProblem problem;
};
inline SynthCi make_synth_ci(uint64_t seed) {
  SynthCi c;
  SynthOptions so;
  so.preset = "ci";
  so.seed = seed;
  c.syn = synthesize(so);
  c.problem = make_attention_problem(c.syn.dataset("/attention/q"), c.syn.dataset("/attention/k"),
                                     c.syn.dataset("/attention/v"), c.syn.config);
  return c;
}
// Seed 1 (the calibration fixture) and seed 2 (another step's tensors, for
// the stale-V fault). The views point into the static's own tensors.
inline const SynthCi& synth_ci(uint64_t seed = 1) {
  static const SynthCi one = make_synth_ci(1);
  static const SynthCi two = make_synth_ci(2);
  return seed == 2 ? two : one;
}

// How a bf16 SDPA kernel (FlashAttention 2, cuDNN) computes: float32 scores
// from the bf16 inputs, a float32 softmax with the row max subtracted, the
// denominator summed from the float32 P, P rounded to bf16 for the P·V
// product, float32 accumulation, output rounded to bf16. The knobs plant
// faults into it.
struct SdpaLike {
  double scale_factor = 1.0;    // softmax scale multiplier (1: the fixture's)
  bool drop_cond_keys = false;  // conditioning keys ignored
  int64_t drop_from = 0, drop_to = 0;  // keys [drop_from, drop_to) ignored
  const Tensor* v = nullptr;    // another V [S, H, D] (stale values)
};

inline Tensor sdpa_bf16_like(const AttentionProblem& p, const SdpaLike& o = {}) {
  using RowMat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  const int64_t S = p.q.S, H = p.q.H, D = p.q.D;
  const BSHDView v = o.v ? BSHDView::of(*o.v) : p.v;
  std::vector<char> key_on(static_cast<size_t>(S), 1);
  if (o.drop_cond_keys)
    for (const auto& seg : p.segments)
      if (!seg.video)
        for (int64_t s = seg.start; s < seg.end(); ++s) key_on[static_cast<size_t>(s)] = 0;
  for (int64_t s = o.drop_from; s < o.drop_to; ++s) key_on[static_cast<size_t>(s)] = 0;
  const float scale = static_cast<float>(p.softmax_scale * o.scale_factor);
  Tensor out({S, H, D}, DType::bf16);
  for (int64_t h = 0; h < H; ++h) {
    RowMat Q(S, D), K(S, D), V(S, D);
    for (int64_t s = 0; s < S; ++s)
      for (int64_t d = 0; d < D; ++d) {
        Q(s, d) = static_cast<float>(p.q(s, h, d));
        K(s, d) = static_cast<float>(p.k(s, h, d));
        V(s, d) = static_cast<float>(v(s, h, d));
      }
    const RowMat scores = Q * K.transpose();
    RowMat P = RowMat::Zero(S, S);
    std::vector<float> l(static_cast<size_t>(S), 0.0f);
    for (int64_t i = 0; i < S; ++i) {
      float m = -INFINITY;
      for (int64_t j = 0; j < S; ++j)
        if (key_on[static_cast<size_t>(j)]) m = std::max(m, scores(i, j) * scale);
      for (int64_t j = 0; j < S; ++j) {
        if (!key_on[static_cast<size_t>(j)]) continue;
        const float e = static_cast<float>(detmath::exp(static_cast<double>(scores(i, j) * scale - m)));
        l[static_cast<size_t>(i)] += e;
        P(i, j) = num::bf16_round(e);
      }
    }
    const RowMat acc = P * V;
    for (int64_t i = 0; i < S; ++i)
      for (int64_t d = 0; d < D; ++d)
        out.data[static_cast<size_t>((i * H + h) * D + d)] = num::bf16_round(acc(i, d) / l[static_cast<size_t>(i)]);
  }
  return out;
}

// The ids of the rules (built-in checks included) a verdict failed.
inline std::vector<std::string> failed_rules(const CandidateVerdict& v) {
  std::vector<std::string> ids;
  for (const auto& o : v.outcomes)
    if (o.status == RuleStatus::fail) ids.push_back(o.id);
  return ids;
}

inline std::string join(const std::vector<std::string>& v, const char* sep = ", ") {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : sep) + x;
  return s;
}

}  // namespace ts::calib
