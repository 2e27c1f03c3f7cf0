#include "drivers/stage_comparison.hpp"

#include "drivers/run_cases.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/block_stage_table.hpp"
#include "core/error.hpp"
#include "fixtures/fixture.hpp"
#include "gates/gate_file.hpp"
#include "reference/block.hpp"
#include "reference/block_stages.hpp"

namespace ts {
namespace {

std::string group_of(const std::string& set) {
  if (set == "observed") return "/block/stages";
  if (set.empty() || set.find('/') != std::string::npos)
    throw InputError("--stages: '" + set + "' is not a stage set (observed, recompute or an output name)");
  return "/outputs/" + set + "/stages";
}

// The elementwise stages recomputed from `set`'s own inputs.
class Recompute {
 public:
  Recompute(const std::string& fixture, const std::string& group) : fixture_(fixture), group_(group) {
    in_.config = load_fixture(fixture).config;
    in_.modulation = read_tensor(fixture, "/block/modulation");
    if (has_dataset(fixture, "/block/modulation_row")) {
      for (double v : read_tensor(fixture, "/block/modulation_row").data)
        in_.modulation_row.push_back(static_cast<int32_t>(v));
    }
    in_.x = read_tensor(fixture, "/block/x");
  }

  std::optional<Tensor> stage(const BlockStageInfo& st) {
    auto input = [&](BlockStage s) -> std::optional<Tensor> {
      const std::string ds = group_ + "/" + stage_name(s);
      if (!has_dataset(fixture_, ds)) return std::nullopt;
      return read_tensor(fixture_, ds);
    };
    const std::optional<Tensor> own = input(st.id);
    if (!own) return std::nullopt;
    const blk::Arith ar = arith(*own, st.name);
    auto need = [&](BlockStage s) {
      auto t = input(s);
      if (!t)
        throw InputError(fixture_ + ": " + group_ + "/" + stage_name(s) + " is missing (recompute of " + st.name +
                         " needs it)");
      return std::move(*t);
    };
    using S = BlockStage;
    switch (st.id) {
      case S::modulate1: return blk::modulate_stage(need(S::norm1), in_, kShiftMsa, kScaleMsa, ar);
      case S::modulate2: return blk::modulate_stage(need(S::norm2), in_, kShiftMlp, kScaleMlp, ar);
      case S::residual1: return blk::gated_residual_stage(in_.x, need(S::out_proj), in_, kGateMsa, ar);
      case S::output: return blk::gated_residual_stage(need(S::residual1), need(S::fc2), in_, kGateMlp, ar);
      case S::swiglu: return blk::swiglu_stage(need(S::fc1), ar);
      default: throw InternalError(std::string("recompute: no definition for the elementwise stage ") + st.name);
    }
  }

 private:
  blk::Arith arith(const Tensor& t, const std::string& name) const {
    if (t.dtype == DType::bf16) return blk::Arith::bf16;
    if (t.dtype == DType::f64) return blk::Arith::f64;
    throw InputError(fixture_ + ": " + group_ + "/" + name + " is " + dtype_name(t.dtype) +
                     "; recompute knows the bfloat16 and float64 definitions only");
  }
  std::string fixture_, group_;
  BlockInputs in_;
};

// Unit roundoff of a storage type (half the spacing at 1).
double roundoff(DType t) {
  switch (t) {
    case DType::bf16: return 0x1p-8;
    case DType::f16: return 0x1p-11;
    case DType::f32: return 0x1p-24;
    default: return 0x1p-53;
  }
}

GateFile stage_gate(const std::string& g, bool recompute) {
  if (!g.empty()) return load_gate(g);
  return load_gate(recompute ? "block-elementwise-bit-exact" : "stages-default");
}

std::optional<Tensor> read_stage(const std::string& fixture, const std::string& group, const std::string& stage) {
  if (!has_dataset(fixture, group + "/" + stage)) return std::nullopt;
  return read_tensor(fixture, group + "/" + stage);
}

// One case per judged stage: its evidence (the figures of every stage compared
// up to it) and the gate of the rules that name it, for the one loop.
struct StageCases final : EvidenceProvider {
  std::vector<Case> cases;
  std::vector<Evidence> evidence;
  std::vector<GateFile> gates;
  void add(Case c, Evidence ev, GateFile g) {
    cases.push_back(std::move(c));
    evidence.push_back(std::move(ev));
    gates.push_back(std::move(g));
  }
  size_t index(const Case& c) const { return static_cast<size_t>(&c - cases.data()); }
  void prepare(const std::vector<const Case*>&) override {}
  Evidence gather(const Case& c, CaseFigures& f) override {
    f.backend = c.candidate;
    return evidence[index(c)];
  }
  const GateFile* gate_for(const Case& c) override { return &gates[index(c)]; }
};

}  // namespace

std::string StageRow::status() const {
  if (!missing_in.empty()) return "skip";
  if (!verdict) return "–";
  switch (verdict->verdict) {
    case Verdict::accept: return "pass";
    case Verdict::reject: return "fail";
    case Verdict::inconclusive: return "inconclusive";
    case Verdict::mistrusted: return "mistrusted";
  }
  return "?";
}

StageComparison compare_stages(const std::string& fixture, const std::string& a, const std::string& b,
                               const StageComparisonOptions& opts) {
  if (a == "recompute") throw InputError("--stages: 'recompute' can only be the second (reference) set");
  const bool recompute = b == "recompute";
  if (recompute && !opts.exact.empty()) throw InputError("--stages: --exact does not apply to recompute");
  const std::string ga = group_of(a);
  const std::string gb = recompute ? "" : group_of(b);
  const std::string ge = opts.exact.empty() ? "" : group_of(opts.exact);
  const GateFile gate = stage_gate(opts.gate, recompute);
  for (const auto& r : gate.rules)
    if (gate.tensor_of(r) != "stages" && !find_block_stage(gate.tensor_of(r)))
      throw InputError(gate.source + ": rule '" + r.id + "' judges tensor '" + gate.tensor_of(r) +
                       "', not a block stage");
  if (list_group(fixture, ga).empty())
    throw InputError(fixture + ": " + ga + " is missing or empty (stage set '" + a + "')");
  if (!recompute && list_group(fixture, gb).empty())
    throw InputError(fixture + ": " + gb + " is missing or empty (stage set '" + b + "')");
  if (!ge.empty() && list_group(fixture, ge).empty())
    throw InputError(fixture + ": " + ge + " is missing or empty (exact stage set '" + opts.exact + "')");
  std::optional<Recompute> rc;
  if (recompute) rc.emplace(fixture, ga);

  StageComparison out;
  out.fixture = fixture;
  out.a = a;
  out.b = b;
  out.exact = opts.exact;
  out.run.gate = gate;
  out.run.mode = "stages";
  out.run.input = fixture;
  out.run.baseline = b;
  out.run.context = {{"fixture", fixture}, {"a", a}, {"b", b},
                     {"exact", opts.exact.empty() ? nlohmann::json(nullptr) : nlohmann::json(opts.exact)}};
  // Figures of every stage compared so far: a growth rule reads its inputs' figures.
  Evidence all;
  StageCases stages;
  for (const auto& st : block_stage_table()) {
    StageRow row;
    row.stage = st.name;
    if (recompute && !st.elementwise) continue;
    std::optional<Tensor> ta = read_stage(fixture, ga, st.name), tb;
    if (recompute) {
      if (ta) tb = rc->stage(st);
    } else {
      tb = read_stage(fixture, gb, st.name);
    }
    if (!ta || !tb) {
      row.missing_in = !ta ? a : b;
      out.rows.push_back(row);
      continue;
    }
    if (ta->shape != tb->shape)
      throw InputError(fixture + ": stage " + st.name + " has shape " + ta->shape_string() + " in '" + a + "' but " +
                       tb->shape_string() + " in '" + b + "'");
    ++out.compared;
    row.metrics = compute_metrics(*ta, *tb);
    row.dtype = dtype_name(ta->dtype);
    all.vs_baseline[st.name] = metric_map(*row.metrics);
    all.roundoff[st.name] = ta->dtype == tb->dtype ? 0.0 : std::max(roundoff(ta->dtype), roundoff(tb->dtype));
    if (!ge.empty()) {
      if (const auto te = read_stage(fixture, ge, st.name)) {
        if (te->shape != ta->shape)
          throw InputError(fixture + ": stage " + st.name + " has shape " + te->shape_string() + " in '" +
                           opts.exact + "' but " + ta->shape_string() + " in '" + a + "'");
        all.vs_exact[st.name] = metric_map(compute_metrics(*ta, *te));
        all.baseline_vs_exact[st.name] = metric_map(compute_metrics(*tb, *te));
      }
    }
    // The rules that name this stage, judged on it.
    GateFile g = gate;
    g.tensor = st.name;
    g.rules.clear();
    for (auto r : gate.rules) {
      const std::string& t = gate.tensor_of(r);
      if (t != "stages" && t != st.name) continue;
      r.tensor = st.name;
      g.rules.push_back(r);
    }
    if (!g.rules.empty()) {
      Evidence ev = all;
      ev.candidate = st.name;
      ev.details = {{"stage", st.name}, {"dtype", row.dtype}, {"metrics", row.metrics->to_json()}};
      if (std::any_of(g.rules.begin(), g.rules.end(), [](const GateRule& r) { return r.is_speed(); })) {
        ev.speed = SpeedEvidence{};
        ev.speed->missing = "no timings: a stage set holds outputs, not timing samples";
      }
      CaseRequest rq;
      rq.source = CaseSource::stage;
      rq.input = fixture;
      rq.stage_set = a;
      rq.baseline = b;
      rq.candidates = {st.name};
      rq.gate_arg = opts.gate;
      rq.exact_set = opts.exact;
      stages.add(std::move(make_cases(rq).front()), std::move(ev), std::move(g));
    }
    out.rows.push_back(std::move(row));
  }
  if (!stages.cases.empty()) {
    const CaseRun cr = run_cases(gate, stages.cases, &stages);
    size_t i = 0;
    for (auto& row : out.rows) {
      if (i >= stages.cases.size() || row.stage != stages.cases[i].candidate) continue;
      row.verdict = cr.run.candidates[i++];
      out.run.candidates.push_back(*row.verdict);
      if (row.verdict->verdict == Verdict::reject && out.first_failing.empty()) out.first_failing = row.stage;
      if (row.verdict->verdict == Verdict::inconclusive && out.first_inconclusive.empty())
        out.first_inconclusive = row.stage;
    }
  }
  if (out.compared == 0) throw InputError(fixture + ": no stage is present in both '" + a + "' and '" + b + "'");
  if (out.run.candidates.empty())
    throw InputError(gate.source + ": no rule of the gate names a compared stage");
  return out;
}

int StageComparison::exit_code() const { return run.exit_code(); }

}  // namespace ts
