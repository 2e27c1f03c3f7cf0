// Calibration of the shipped sage_compat gate on the synthesized `ci`
// fixture (seed 1, the fixture of docs/emulation.md's bands): every
// legitimate candidate ACCEPTs, every planted fault REJECTs on the rule meant
// to catch it. Candidates are judged through add_accuracy_evidence + judge(),
// the code a gate run uses. The figures printed here are gates/README.md's
// calibration table.
#include <cstdio>
#include <functional>
#include <limits>

#include "calibration_support.hpp"
#include "catch.hpp"
#include "reference/sage2_presets.hpp"

using namespace ts;
using namespace ts::calib;

namespace {

const GateFile& sage_compat() {
  static const GateFile g = load_gate("sage_compat");
  return g;
}

const GateInputs& ci() {
  static const GateInputs in = gate_inputs(synth_ci().problem, sage_compat().baseline);
  return in;
}

const Tensor& sdpa_like() {
  static const Tensor t = sdpa_bf16_like(ci().problem);
  return t;
}

double fig(const Figures& f, const std::string& name) {
  auto it = f.find(name);
  return it == f.end() || !it->second ? std::numeric_limits<double>::quiet_NaN() : *it->second;
}

// One row of the calibration table: the figures the rules read.
void print_row(const std::string& name, const Tensor& out, const CandidateVerdict& v) {
  Evidence ev;
  add_accuracy_evidence(ev, "attention", out, ci().baseline, ci().exact, ci().baseline_vs_exact, &ci().problem.config);
  const Figures& b = ev.vs_baseline["attention"];
  const Figures& e = ev.vs_exact["attention"];
  std::printf("| %-34s | %.4g | %.6f | %.4g | %.4g | %.4g | %.4g | %.3g | %s %s |\n", name.c_str(),
              fig(b, "rel_l2"), fig(b, "cosine"), fig(e, "rel_l2"), fig(e, "rel_l2_worst_head"),
              fig(e, "rel_l2_worst_qblock"), fig(e, "rel_l2_worst_frame"), fig(e, "gain_error_worst_head"),
              verdict_name(v.verdict), join(failed_rules(v)).c_str());
}

void print_header(const char* title) {
  const Figures& be = ci().baseline_vs_exact;
  std::printf("\n%s (baseline %s: rel_l2 vs exact %.4g, worst head %.4g, worst query block %.4g, worst frame %.4g)\n",
              title, sage_compat().baseline.c_str(), fig(be, "rel_l2"), fig(be, "rel_l2_worst_head"),
              fig(be, "rel_l2_worst_qblock"), fig(be, "rel_l2_worst_frame"));
  std::printf("| candidate | rel_l2 vs base | cosine vs base | rel_l2 vs exact | worst head | worst qblock | "
              "worst frame | gain err | verdict |\n");
}

// A fault planted into a legitimate output, as llama.cpp's test-backend-ops
// cases: a name, what it models, the rule that must catch it, and how to make it.
struct Fault {
  std::string name;
  std::string description;
  std::string rule;  // the rule id that must fail (others may fail too)
  std::function<Tensor()> make;
};

int64_t S() { return ci().problem.q.S; }
int64_t H() { return ci().problem.q.H; }
int64_t D() { return ci().problem.q.D; }
double& at(Tensor& t, int64_t s, int64_t h, int64_t d) {
  return t.data[static_cast<size_t>((s * H() + h) * D() + d)];
}
double bf16(double x) { return num::bf16_round(static_cast<float>(x)); }

// Tokens of latent frame f.
std::vector<int64_t> frame_tokens(int64_t f) {
  std::vector<int64_t> t;
  for (int64_t s = 0; s < S(); ++s)
    if (ci().problem.config.frame_of_token(s) == f) t.push_back(s);
  return t;
}

const std::vector<Fault>& faults() {
  static const std::vector<Fault> list = {
      {"head_scaled", "one head's output scaled by 1.03 (a per-head scale factor applied twice)", "head_gain",
       [] {
         Tensor t = sdpa_like();
         for (int64_t s = 0; s < S(); ++s)
           for (int64_t d = 0; d < D(); ++d) at(t, s, 1, d) = bf16(at(t, s, 1, d) * 1.03);
         return t;
       }},
      {"output_scaled", "every output scaled by 1.02 (a wrong normalisation constant)", "head_gain",
       [] {
         Tensor t = sdpa_like();
         for (double& x : t.data) x = bf16(x * 1.02);
         return t;
       }},
      {"cond_dropped", "conditioning keys ignored (the cond segments' keys and values left out)", "vs_exact",
       [] {
         SdpaLike o;
         o.drop_cond_keys = true;
         return sdpa_bf16_like(ci().problem, o);
       }},
      {"softmax_scale_wrong", "softmax scale multiplied by log2(e) (exp2 taken for exp)", "sage_like",
       [] {
         SdpaLike o;
         o.scale_factor = 1.4426950408889634;
         return sdpa_bf16_like(ci().problem, o);
       }},
      {"fp16_overflow", "fp16 P·V accumulator with V scaled to FP8's whole range: partial sums overflow to Inf",
       "finite_guard",
       [] { return run_backend(ci(), std::string(sage2_default_spec()) + ",scale_max=448"); }},
      {"one_nan", "one NaN in the output", "finite_guard",
       [] {
         Tensor t = sdpa_like();
         at(t, S() / 2, 1, 7) = std::numeric_limits<double>::quiet_NaN();
         return t;
       }},
      {"all_zeros", "an all-zero output (the \"return zeros\" cheat)", "zero_guard",
       [] {
         Tensor t = sdpa_like();
         for (double& x : t.data) x = 0;
         return t;
       }},
      {"token_shift", "query block 2's rows shifted by one token (an off-by-one in the store index)",
       "qblock_vs_exact",
       [] {
         Tensor t = sdpa_like();
         const Tensor& src = sdpa_like();
         for (int64_t s = 256; s < 383; ++s)
           for (int64_t h = 0; h < H(); ++h)
             for (int64_t d = 0; d < D(); ++d) at(t, s, h, d) = src.data[static_cast<size_t>(((s + 1) * H() + h) * D() + d)];
         return t;
       }},
      {"query_blocks_swapped", "query blocks 1 and 2 written to each other's rows", "sage_like",
       [] {
         Tensor t = sdpa_like();
         const Tensor& src = sdpa_like();
         for (int64_t s = 128; s < 384; ++s) {
           const int64_t from = s < 256 ? s + 128 : s - 128;
           for (int64_t h = 0; h < H(); ++h)
             for (int64_t d = 0; d < D(); ++d) at(t, s, h, d) = src.data[static_cast<size_t>((from * H() + h) * D() + d)];
         }
         return t;
       }},
      {"frame_zeroed", "latent frame 1's tokens left at zero (a launch that skipped one frame)", "frame_vs_exact",
       [] {
         Tensor t = sdpa_like();
         for (int64_t s : frame_tokens(1))
           for (int64_t h = 0; h < H(); ++h)
             for (int64_t d = 0; d < D(); ++d) at(t, s, h, d) = 0;
         return t;
       }},
      {"frame_scaled", "latent frame 2's outputs scaled by 1.05", "frame_vs_exact",
       [] {
         Tensor t = sdpa_like();
         for (int64_t s : frame_tokens(2))
           for (int64_t h = 0; h < H(); ++h)
             for (int64_t d = 0; d < D(); ++d) at(t, s, h, d) = bf16(at(t, s, h, d) * 1.05);
         return t;
       }},
      {"heads_swapped", "heads 0 and 1 written to each other's slots", "sage_like",
       [] {
         Tensor t = sdpa_like();
         const Tensor& src = sdpa_like();
         for (int64_t s = 0; s < S(); ++s)
           for (int64_t d = 0; d < D(); ++d) {
             at(t, s, 0, d) = src.data[static_cast<size_t>((s * H() + 1) * D() + d)];
             at(t, s, 1, d) = src.data[static_cast<size_t>((s * H() + 0) * D() + d)];
           }
         return t;
       }},
      {"stale_v_cond", "the conditioning tokens' V from another step (a stale cached cond KV)", "vs_exact",
       [] {
         Tensor v = synth_ci(1).syn.dataset("/attention/v");
         const Tensor& other = synth_ci(2).syn.dataset("/attention/v");
         for (const auto& seg : ci().problem.segments)
           if (!seg.video)
             for (int64_t i = seg.start * H() * D(); i < seg.end() * H() * D(); ++i)
               v.data[static_cast<size_t>(i)] = other.data[static_cast<size_t>(i)];
         SdpaLike o;
         o.v = &v;
         return sdpa_bf16_like(ci().problem, o);
       }},
      {"key_block_skipped", "keys 128..191 ignored (a key loop that skips one 64-key block)", "qblock_vs_exact",
       [] {
         SdpaLike o;
         o.drop_from = 128;
         o.drop_to = 192;
         return sdpa_bf16_like(ci().problem, o);
       }},
      {"sage2_head_scaled", "the sage2 emulation with head 3 scaled by 1.03 (noise and a bias together)",
       "head_gain",
       [] {
         Tensor t = ci().baseline;
         for (int64_t s = 0; s < S(); ++s)
           for (int64_t d = 0; d < D(); ++d) at(t, s, 3, d) = bf16(at(t, s, 3, d) * 1.03);
         return t;
       }},
  };
  return list;
}

}  // namespace

TEST_CASE("sage_compat ACCEPTs exact, float32 exact, bf16 SDPA-like attention and every sage2 preset") {
  std::vector<std::pair<std::string, Tensor>> cands = {
      {"exact", run_backend(ci(), "exact")},
      {"exact:precision=fp32", run_backend(ci(), "exact:precision=fp32")},
      {"sdpa_bf16_like (test-side)", sdpa_like()},
  };
  for (const auto& p : sage2_presets()) {
    const std::string spec = std::string("sage2:preset=") + p.name;
    cands.emplace_back(spec, run_backend(ci(), spec));
  }
  print_header("sage_compat calibration, legitimate candidates");
  for (const auto& [name, out] : cands) {
    const CandidateVerdict v = judge_output(sage_compat(), ci(), name, out);
    print_row(name, out, v);
    INFO(name << ": " << verdict_name(v.verdict) << ", failed " << join(failed_rules(v)));
    for (const auto& o : v.outcomes) UNSCOPED_INFO(o.id << ": " << o.message);
    CHECK(v.verdict == Verdict::accept);
  }
}

TEST_CASE("sage_compat REJECTs every planted fault on the rule meant to catch it") {
  const auto& list = faults();
  REQUIRE(list.size() >= 10);
  // The rule each fault names is a rule of the gate or a built-in check.
  std::vector<std::string> ids = {"zero_guard", "finite_guard"};
  for (const auto& r : sage_compat().rules) ids.push_back(r.id);
  print_header("sage_compat calibration, planted faults");
  int rejected = 0;
  for (const auto& f : list) {
    INFO(f.name << " (" << f.description << ")");
    REQUIRE(std::find(ids.begin(), ids.end(), f.rule) != ids.end());
    const Tensor out = f.make();
    const CandidateVerdict v = judge_output(sage_compat(), ci(), f.name, out);
    print_row(f.name, out, v);
    const auto failed = failed_rules(v);
    INFO("verdict " << verdict_name(v.verdict) << ", failed rules: " << join(failed));
    for (const auto& o : v.outcomes)
      if (o.id == f.rule) UNSCOPED_INFO(f.rule << ": " << o.message);
    CHECK(v.verdict == Verdict::reject);
    CHECK(std::find(failed.begin(), failed.end(), f.rule) != failed.end());
    rejected += v.verdict == Verdict::reject ? 1 : 0;
  }
  CHECK(rejected == static_cast<int>(list.size()));
}

TEST_CASE("the subtle faults hide in the whole-tensor figures: only the breakdown rules catch them") {
  // Why the gate has per-head, per-query-block and per-frame rules: these
  // faults pass every whole-tensor rule of sage_compat.
  for (const std::string name : {"head_scaled", "output_scaled", "frame_scaled", "sage2_head_scaled"}) {
    const auto& list = faults();
    const auto f = std::find_if(list.begin(), list.end(), [&](const Fault& x) { return x.name == name; });
    REQUIRE(f != list.end());
    const CandidateVerdict v = judge_output(sage_compat(), ci(), f->name, f->make());
    INFO(name << " failed " << join(failed_rules(v)));
    for (const auto& o : v.outcomes)
      if (o.id == "sage_like" || o.id == "direction" || o.id == "vs_exact") CHECK(o.status == RuleStatus::pass);
    CHECK(v.verdict == Verdict::reject);
  }
}
