#include "drivers/run_cases.hpp"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <set>

#include "core/error.hpp"
#include "core/phase.hpp"
#include "core/progress.hpp"
#include "core/timing_defaults.hpp"
#include "drivers/measurement_evidence.hpp"
#include "drivers/run_estimate.hpp"
#include "fixtures/attention_inputs.hpp"
#include "fixtures/fixture.hpp"
#include "fixtures/identity.hpp"
#include "gates/accuracy_evidence.hpp"
#include "gates/bootstrap.hpp"
#include "gates/metrics.hpp"
#include "kernels_under_test/registry.hpp"
#include "reference/sage2_presets.hpp"

namespace ts {

// The one holder of the key to judge() (gates/verdict.hpp): this loop.
class CaseLoop {
 public:
  static JudgeKey key() { return JudgeKey(); }
};

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

nlohmann::json opt_json(const std::optional<double>& v) { return figure_json(v); }

std::optional<double> number_of(const nlohmann::json& j, const char* key) {
  if (!j.contains(key)) return std::nullopt;
  return figure_of(j[key]);  // a NaN figure stays NaN: it is not a missing one
}

bool reads_groups(const GateFile& g) {
  for (const auto& r : g.rules)
    if (r.metric.find("_worst_") != std::string::npos || r.metric.find("gain_error") != std::string::npos) return true;
  return false;
}

// The gate without its speed rules, for --accuracy-only.
GateFile accuracy_gate(const GateFile& g) {
  GateFile out = g;
  out.rules.clear();
  for (const auto& r : g.rules)
    if (!r.is_speed()) out.rules.push_back(r);
  return out;
}

// A stored time faster than any GPU computes dense attention would decide a
// speed rule on a fiction (core/timing_defaults.hpp kMistrustCeilingTflops).
constexpr double kCeilingTflops = kMistrustCeilingTflops;

std::optional<std::string> implausible_time(const AttentionBackend& b, const BlockConfig& config) {
  const auto t = b.stored_timings_ms();
  if (!t || t->empty()) return std::nullopt;
  const double ms = median_of(*t);
  const double tflops = attention_flops(config) / (ms * 1e-3) / 1e12;
  if (ms > 0 && tflops <= kCeilingTflops) return std::nullopt;
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "stored:%s's median time %.4g ms is %.3g TFLOP/s dense-equivalent, beyond the %.0f TFLOP/s any "
                "device reaches: its timings cannot be trusted",
                b.name().c_str(), ms, tflops, kCeilingTflops);
  return std::string(buf);
}

// The geometry of a fixture's attention without its values: all a stored
// output's reader asks of the problem.
// A backend's output: a stored one as the file holds it, others as computed.
HeldTensor run_held(AttentionBackend& b, const AttentionProblem& p) {
  HeldTensor out;
  if (b.is_stored()) out.stored = b.run_stored(p);
  if (!out.stored) out.dense = b.run(p).out;
  return out;
}

// A case's side, through its spec as the case parsed it (else the text, whose
// error is then bad input here, where the old checks reported it).
std::unique_ptr<AttentionBackend> make_side(const std::optional<BackendSpec>& spec, const std::string& text,
                                            const BackendContext& ctx) {
  return spec ? spec->make(ctx) : make_attention_backend(text, ctx);
}
// Whether a backend can take a problem of stored inputs: it converts them itself, or it reads a
// stored output and no input at all.
bool reads_stored_inputs(const AttentionBackend& b) { return b.reads_stored_inputs() || b.is_stored(); }
bool side_is(const std::optional<BackendSpec>& spec, bool (BackendSpec::*what)() const) {
  return spec && ((*spec).*what)();
}

AttentionProblem shape_only_problem(const Fixture& fx) {
  AttentionProblem p;
  for (auto [view, t] : {std::pair{&p.q, &fx.q}, std::pair{&p.k, &fx.k}, std::pair{&p.v, &fx.v}}) {
    if (t->rank() != 3) throw InternalError("shape_only_problem: an input is not [S, H, D]");
    *view = BSHDView{nullptr, t->dim(0), t->dim(1), t->dim(2), t->dim(1) * t->dim(2), t->dim(2), 1};
  }
  p.input_dtype = fx.q.dtype;
  p.segments = fx.config.segments;
  p.softmax_scale = fx.config.softmax_scale;
  p.config = fx.config;
  return p;
}

// A bound that is a multiple of the baseline's own error against exact (max_ratio_to_baseline)
// is 0 when the baseline is the exact reference: only exact itself could pass. Such a baseline
// is bad input, refused with what to use instead (gates/README.md "Verdicts").
void refuse_exact_baseline(const GateFile& gate, const std::string& baseline, const std::string& why) {
  std::string ids;
  double k = 0;
  for (const auto& r : gate.rules)
    if (r.max_ratio_to_baseline) {
      ids += (ids.empty() ? "'" : ", '") + r.id + "'";
      k = *r.max_ratio_to_baseline;
    }
  if (ids.empty()) return;
  throw InputError("baseline '" + baseline + "' " + why + ", so gate " + gate.name + "'s rule(s) " + ids +
                   " (at most " + format_number(k) + " x the baseline's own error against exact) would bound "
                   "the candidate's error by 0: give a baseline with an error of its own, e.g. sage2:preset=" +
                   sage2_default_preset().name);
}

// The identity of a sealed fixture, from its stored digests alone; an unsealed
// one's would mean hashing every input again, so it is left unknown.
FixtureIdentity sealed_identity(const std::string& path) {
  FixtureIdentity id;
  for (const char* in : {"/attention/q", "/attention/k", "/attention/v"}) {
    const nlohmann::json a = read_attrs(path, in);
    if (!a.contains("digest") || !a["digest"].is_string()) return id;
  }
  return fixture_identity(path);
}

// Fixture cases (computed and stored candidates): one fixture loaded at a
// time, its exact reference and each baseline computed once, the candidates in
// the order given (a backend may continue from the one run before it).
class FixtureProvider final : public EvidenceProvider {
 public:
  FixtureProvider(const GateFile& gate, const CaseOptions& o) : gate_(gate), o_(o) {}

  void prepare(const std::vector<const Case*>& cases) override {
    std::map<std::string, std::vector<const Case*>> by_fixture;
    for (const Case* c : cases) {
      if (c->input.empty()) throw InputError("a fixture case needs a fixture");
      if (c->candidate.empty()) throw InputError(c->input + ": a case needs a candidate");
      by_fixture[c->input].push_back(c);
    }
    for (const auto& [path, group] : by_fixture) {
      for (const Case* c : group) {
        require_device_for(c->baseline);
        require_device_for(c->candidate);
      }
      // Only one fixture is held at a time: the others are validated now and loaded at their turn.
      LoadOptions lo;
      lo.allow_nonfinite = o_.allow_nonfinite;
      if (only_stored(path, group)) stored_only_.insert(path);
      // The inputs' geometry first (a malformed file is bad input here); their values after the backends.
      const BlockConfig config = read_fixture_config(path);
      const BackendContext ctx{path};
      // Every spec is built before anything runs: a typo is bad input (exit 2), not a rejected candidate.
      const ExactChoice ex = choose_exact(o_.exact, path, config);
      bool stored_inputs = reads_stored_inputs(*make_attention_backend(ex.spec, ctx));
      std::map<std::string, int> runs;
      const bool timed = has_speed_rule(gate_) && !o_.accuracy_only && o_.timed;
      const int per_timed = o_.warmup + o_.pairs;
      runs[ex.spec] += 1;
      for (const Case* c : group) {
        if (side_is(c->baseline_spec, &BackendSpec::is_exact_reference) || c->baseline == ex.spec)
          refuse_exact_baseline(gate_, c->baseline, "is an exact reference (its own error is 0 or rounding)");
        stored_inputs = reads_stored_inputs(*make_side(c->baseline_spec, c->baseline, ctx)) && stored_inputs;
        made_[c] = make_side(c->candidate_spec, c->candidate, ctx);
        stored_inputs = reads_stored_inputs(*made_[c]) && stored_inputs;
        runs[c->baseline] += runs.count(c->baseline) ? 0 : 1;
        runs[c->candidate] += 1;
        if (timed && !speed_is_excluded(*c)) {
          runs[c->candidate] += per_timed;
          runs[c->baseline] += per_timed;
        }
      }
      refuse_slow_cpu({runs.begin(), runs.end()}, config, SlowGuard::from_env(o_.allow_slow), o_.command);
      // Every backend converts the inputs its own way (or reads a stored output): they are read as
      // stored, with no float64 copy (at block24 6.5 GB written for 1.6 GB stored).
      if (stored_inputs && !stored_only_.count(path)) stored_inputs_.insert(path);
      if (by_fixture.size() == 1) {
        load(path);
      } else {
        LoadOptions check = lo;
        check.values = false;  // verified now, its values read at its turn
        load_fixture(path, check);
      }
    }
  }

  Evidence gather(const Case& c, CaseFigures& fig) override {
    State& st = load(c.input);
    Baseline& base = baseline(st, c);
    Evidence ev;
    ev.candidate = c.candidate;
    auto made = made_.find(&c);
    std::unique_ptr<AttentionBackend> cand =
        made != made_.end() ? std::move(made->second) : make_side(c.candidate_spec, c.candidate, st.ctx);
    if (made != made_.end()) made_.erase(made);
    fig.backend = cand->name();
    if (st.previous) cand->continue_from(*st.previous);
    const auto t0 = Clock::now();
    try {
      HeldTensor out;
      AttentionResult res;
      {
        const Phase ph("run " + fig.backend);
        if (cand->is_stored()) out.stored = cand->run_stored(st.problem);
        if (!out.stored) {
          res = cand->run(st.problem);
          out.dense = std::move(res.out);
        }
      }
      fig.wall_ms = ms_since(t0);
      fig.stats = res.stats;
      fig.density = number_of(res.stats, "density");
      {
        const Phase ph("figures of " + fig.backend + " vs baseline and exact");
        add_accuracy_evidence(ev, "attention", out.ref(), base.out.ref(), st.exact_out.ref(), base.vs_exact, groups(st));
      }
      if (base.metrics.nonfinite > 0)
        ev.mistrusted.push_back("the baseline '" + c.baseline + "' has " + std::to_string(base.metrics.nonfinite) +
                                " non-finite values: nothing trustworthy to judge against");
      // Figures against a reference with NaN (zeroed by the metrics' guards)
      // would read as a kernel's fault; the evidence is what cannot be trusted.
      if (st.exact_nonfinite > 0)
        ev.mistrusted.push_back("the exact reference '" + st.exact.spec + "' has " +
                                std::to_string(st.exact_nonfinite) +
                                " non-finite values: the figures against exact mean nothing");
      ev.details["backend"] = cand->name();
      ev.details["params"] = cand->params();
      if (!res.stats.empty()) ev.details["stats"] = res.stats;
    } catch (const InputError&) {
      throw;
    } catch (const std::exception& e) {
      ev.error = e.what();
    }
    if (const auto t = cand->stored_timings_ms()) {
      fig.timings_median_ms = median_of(*t);
      fig.timings_clock = cand->stored_timings_clock();
    }
    for (AttentionBackend* side : {cand.get(), base.backend.get()})
      if (const auto why = implausible_time(*side, st.fx.config)) ev.mistrusted.push_back(*why);
    if (ev.error.empty()) {
      for (const char* k : {"vs_baseline", "vs_exact"}) {
        if (!ev.details.contains(k)) continue;
        const nlohmann::json& d = ev.details[k];
        const bool b = std::string(k) == "vs_baseline";
        (b ? fig.rel_l2_vs_baseline : fig.rel_l2_vs_exact) = number_of(d, "rel_l2");
        (b ? fig.cosine_vs_baseline : fig.cosine_vs_exact) = number_of(d, "cosine");
        if (b) fig.nonfinite = number_of(d, "nonfinite");
      }
      if (has_speed_rule(gate_) && !o_.accuracy_only) {
        ev.speed = speed(st, c, *cand, *base.backend);
        ev.details["speed"] = ev.speed->to_json();
      }
    }
    st.previous = std::move(cand);
    return ev;
  }

  nlohmann::json context_of(const std::string& path) const {
    auto it = contexts_.find(path);
    return it == contexts_.end() ? nlohmann::json::object() : it->second;
  }
  // The exact reference's and each baseline's own run on a fixture: name, wall ms, distance.
  nlohmann::json reference_runs(const std::string& path) const {
    auto it = runs_.find(path);
    return it == runs_.end() ? nlohmann::json::object() : it->second;
  }

 private:
  struct Baseline {
    std::unique_ptr<AttentionBackend> backend;
    HeldTensor out;
    Figures vs_exact;  // the baseline against exact, per group when the gate reads groups
    MetricSet metrics;
  };
  struct State {
    std::string path;
    Fixture fx;
    AttentionProblem problem;
    BackendContext ctx;
    ExactChoice exact;
    HeldTensor exact_out;
    int64_t exact_nonfinite = 0;  // -1: not counted yet (a stored exact: the first baseline's figures count it)
    bool exact_done = false;
    std::map<std::string, Baseline> baselines;
    std::optional<SpeedMeasurer> measurer;
    std::unique_ptr<AttentionBackend> previous;
  };

  const BlockConfig* groups(const State& st) const {
    return o_.group_figures || reads_groups(gate_) ? &st.fx.config : nullptr;
  }

  State& load(const std::string& path) {
    if (state_ && state_->path == path) return *state_;
    state_.reset();  // one fixture in memory at a time
    auto st = std::make_unique<State>();
    st->path = path;
    LoadOptions lo;
    lo.allow_nonfinite = o_.allow_nonfinite;
    if (stored_only_.count(path)) {
      // Every backend reads a stored output: the inputs are verified, their values not held.
      lo.values = false;
      st->fx = load_fixture(path, lo);
      st->problem = shape_only_problem(st->fx);
    } else {
      lo.stored_inputs = stored_inputs_.count(path) > 0;
      st->fx = load_fixture(path, lo);
      st->problem = attention_problem(st->fx);
    }
    st->ctx = BackendContext{path};
    st->exact = choose_exact(o_.exact, path, st->fx.config);
    state_ = std::move(st);
    return *state_;
  }

  const HeldTensor& exact(State& st) {
    if (!st.exact_done) {
      auto b = make_attention_backend(st.exact.spec, st.ctx);
      const auto t0 = Clock::now();
      const Phase ph("exact reference " + b->name());
      st.exact_out = run_held(*b, st.problem);
      if (st.exact_out.stored) st.exact_nonfinite = -1;
      else for (double x : st.exact_out.dense.data) st.exact_nonfinite += !std::isfinite(x);
      exact_runs_[st.path] = {{"name", b->name()}, {"ms", ms_since(t0)}};
      st.exact_done = true;
    }
    return st.exact_out;
  }

  Baseline& baseline(State& st, const Case& c) {
    const std::string& spec = c.baseline;
    auto it = st.baselines.find(spec);
    if (it != st.baselines.end()) return it->second;
    const HeldTensor& ex = exact(st);
    Baseline b;
    b.backend = make_side(c.baseline_spec, spec, st.ctx);
    const auto t0 = Clock::now();
    const Phase ph("baseline " + b.backend->name());
    try {
      b.out = run_held(*b.backend, st.problem);
    } catch (const InputError&) {
      throw;
    } catch (const std::exception& e) {
      throw InputError("baseline '" + spec + "' failed: " + e.what());
    }
    const double base_ms = ms_since(t0);
    // With groups, one pass gives both: the breakdown's overall figures are compute_metrics' bits.
    if (groups(st) && b.out.ref().rank() == 3) {
      const MetricBreakdown br = compute_breakdown(b.out.ref(), ex.ref(), *groups(st));
      b.metrics = br.overall;
      b.vs_exact = metric_map(br);
    } else {
      b.metrics = compute_metrics(b.out.ref(), ex.ref());
      b.vs_exact = groups(st) ? accuracy_figures(b.out.ref(), ex.ref(), groups(st)) : metric_map(b.metrics);
    }
    if (st.exact_nonfinite < 0) st.exact_nonfinite = b.metrics.nonfinite_ref;
    for (const auto& r : gate_.rules) {
      const auto f = b.vs_exact.find(r.metric);
      if (r.max_ratio_to_baseline && f != b.vs_exact.end() && f->second && *f->second == 0)
        refuse_exact_baseline(gate_, spec, "has " + r.metric + " 0 against the exact reference '" + st.exact.spec + "'");
    }
    nlohmann::json& ctx = contexts_[st.path];
    if (ctx.empty())
      ctx = {{"fixture", st.path},
             {"shape", ex.ref().shape_string()},
             {"baseline_backend", b.backend->name()},
             {"exact", {{"spec", st.exact.spec}, {"why", st.exact.why}}},
             {"baseline_vs_exact", b.metrics.to_json()}};
    // The results store keys fixtures by their content (history/): a sealed
    // fixture's identity is read from its digests; an unsealed one has none.
    const FixtureIdentity id = sealed_identity(st.path);
    ctx["fixture_sealed"] = id.sealed;
    if (id.sealed) ctx["fixture_identity"] = id.identity;
    // For the sweep's preface: what each reference run took, once.
    nlohmann::json& runs = runs_[st.path];
    runs["exact"] = exact_runs_[st.path];
    runs["S"] = st.problem.q.S;
    runs["H"] = st.problem.q.H;
    runs["D"] = st.problem.q.D;
    runs["baselines"][spec] = {{"name", b.backend->name()}, {"ms", base_ms}, {"vs_exact", b.metrics.to_json()}};
    return st.baselines.emplace(spec, std::move(b)).first->second;
  }

  // Why a case's speed is not judged before anything is timed ("" = it is).
  std::string speed_exclusion(const Case& c) const {
    if (gate_.time_emulations) return "";
    for (const auto* side : {&c.baseline_spec, &c.candidate_spec})
      if (side_is(*side, &BackendSpec::is_emulation))
        return std::string("the ") + (side == &c.baseline_spec ? "baseline" : "candidate") + " '" + (*side)->text() +
               "' is an emulation, whose time is not a kernel's: store the real kernel's timings (python3 -m "
               "touchstone replay) and gate stored:NAME";
    return "";
  }
  bool speed_is_excluded(const Case& c) const { return !speed_exclusion(c).empty(); }

  SpeedEvidence speed(State& st, const Case& c, AttentionBackend& cand, AttentionBackend& base) {
    SpeedEvidence s;
    s.missing = speed_exclusion(c);
    if (!s.missing.empty()) return s;
    if (!st.measurer) st.measurer.emplace(st.fx, st.problem, gate_, o_);
    if (o_.timed || (cand.is_stored() && base.is_stored())) return st.measurer->measure(cand, base);
    s.missing = std::string("not timed (--pairs 0): one run of ") + (cand.is_stored() ? "the baseline" : "a row") +
                " is no sample (--pairs N, or a stored baseline with /timings)";
    return s;
  }

  const GateFile& gate_;
  const CaseOptions& o_;
  std::unique_ptr<State> state_;
  std::map<std::string, nlohmann::json> contexts_, runs_, exact_runs_;
  // The candidates' backends, made when the specs were checked (a plugin is
  // probed once), taken by their case's run.
  std::map<const Case*, std::unique_ptr<AttentionBackend>> made_;
  std::set<std::string> stored_only_;  // fixtures whose every backend is stored:NAME
  std::set<std::string> stored_inputs_;  // fixtures whose every backend reads stored inputs (or outputs)

  bool only_stored(const std::string& path, const std::vector<const Case*>& group) const {
    if (!is_stored_spec(choose_exact(o_.exact, path, read_fixture_config(path)).spec)) return false;
    for (const Case* c : group)
      if (!side_is(c->baseline_spec, &BackendSpec::is_stored) || !side_is(c->candidate_spec, &BackendSpec::is_stored))
        return false;
    return true;
  }
};

const char* mode_of(CaseSource s) {
  switch (s) {
    case CaseSource::measurements: return "measurements";
    case CaseSource::stage: return "stages";
    case CaseSource::chain: return "chain";
    default: return "fixture";
  }
}

}  // namespace

bool has_speed_rule(const GateFile& g) {
  for (const auto& r : g.rules)
    if (r.is_speed()) return true;
  return false;
}

nlohmann::json CaseFigures::to_json() const {
  nlohmann::json j = {{"backend", backend},
                      {"density", opt_json(density)},
                      {"wall_ms", opt_json(wall_ms)},
                      {"rel_l2_vs_baseline", opt_json(rel_l2_vs_baseline)},
                      {"rel_l2_vs_exact", opt_json(rel_l2_vs_exact)},
                      {"cosine_vs_baseline", opt_json(cosine_vs_baseline)},
                      {"cosine_vs_exact", opt_json(cosine_vs_exact)},
                      {"nonfinite", opt_json(nonfinite)}};
  if (timings_median_ms) {
    j["timings_median_ms"] = *timings_median_ms;
    j["timings_clock"] = timings_clock;
  }
  return j;
}

namespace {

CaseRun run_all(const GateFile* judged_by, const std::vector<Case>& cases, EvidenceProvider* stage_provider) {
  const GateFile none;  // figures only: no rule, nothing judged
  const GateFile& gate_in = judged_by ? *judged_by : none;
  if (cases.empty()) throw InputError("nothing to judge: no case (give at least one candidate)");
  const CaseOptions& o = cases.front().options;
  for (const auto& c : cases)
    if (!c.options.same_verdicts(o))
      throw InternalError("run_cases: case " + c.id() + " has options of its own (one run, one set of options)");
  if (o.pairs < 1) throw InputError("--pairs must be at least 1, got " + std::to_string(o.pairs));
  if (o.warmup < 0) throw InputError("--warmup must not be negative, got " + std::to_string(o.warmup));
  if (o.rotate < 1) throw InputError("--rotate must be at least 1, got " + std::to_string(o.rotate));
  if (!(o.budget_s >= 0))
    throw InputError("--budget-s must be a number of seconds >= 0, got " + std::to_string(o.budget_s));
  const GateFile gate = o.accuracy_only ? accuracy_gate(gate_in) : gate_in;
  if (judged_by && gate.rules.empty())
    throw InputError(gate_in.source + ": --accuracy-only leaves no rule (the gate has only speed rules)");

  FixtureProvider fixtures(gate, o);
  MeasurementProvider measurements(gate, o.seed);
  auto provider_of = [&](CaseSource s) -> EvidenceProvider& {
    if (s == CaseSource::measurements) return measurements;
    if (s == CaseSource::stage || s == CaseSource::chain) {  // cases that bring their own evidence
      if (!stage_provider) throw InternalError("run_cases: a stage or chain case without its provider");
      return *stage_provider;
    }
    return fixtures;
  };
  // Everything checkable is checked before any case runs.
  std::map<EvidenceProvider*, std::vector<const Case*>> by_provider;
  for (const auto& c : cases) {
    if (c.source != CaseSource::stage && c.source != CaseSource::chain)
      for (const auto& r : gate.rules)
        if (gate.tensor_of(r) != "attention" && c.source != CaseSource::measurements)
          throw InputError(gate.source + ": rule '" + r.id + "' judges tensor '" + gate.tensor_of(r) +
                           "'; cases on a fixture judge attention (judge block stages with touchstone compare F "
                           "--stages A B --gate G)");
    by_provider[&provider_of(c.source)].push_back(&c);
  }
  for (auto& [p, group] : by_provider) p->prepare(group);
  if (o.check_only) return {};

  CaseRun out;
  GateRun& run = out.run;
  run.gate = gate;
  run.mode = mode_of(cases.front().source);
  run.input = cases.front().input;
  run.baseline = cases.front().baseline;
  if (o.accuracy_only)
    run.context["accuracy_only"] =
        "speed rules skipped (--accuracy-only): " + std::to_string(gate_in.rules.size() - gate.rules.size()) +
        " rule(s) not judged; the verdicts follow accuracy alone";
  Progress progress(o.command, static_cast<int64_t>(cases.size()));
  for (const auto& c : cases) {
    EvidenceProvider& p = provider_of(c.source);
    CaseResult r{c, {}};
    Evidence ev = p.gather(c, r.figures);
    if (o.accuracy_only) ev.notes.push_back("accuracy only: speed rules were not judged (--accuracy-only)");
    if (!ev.error.empty()) r.figures.stats["error"] = ev.error;
    if (judged_by) {
      const GateFile* g = p.gate_for(c);
      CandidateVerdict v = judge(g ? *g : gate, ev, c.repro(), CaseLoop::key());
      v.details["case"] = {{"id", c.id()}, {"name", c.name()}, {"source", case_source_name(c.source)}};
      run.candidates.push_back(std::move(v));
    }
    out.results.push_back(std::move(r));
    progress.advance();
  }
  for (const auto& c : cases)
    if (c.source == CaseSource::computed || c.source == CaseSource::stored) {
      out.fixtures[c.input] = fixtures.context_of(c.input);
      out.reference_runs[c.input] = fixtures.reference_runs(c.input);
    }
  if (run.mode == "fixture") {
    nlohmann::json ctx = out.fixtures.value(run.input, nlohmann::json::object());
    for (auto& [k, v] : ctx.items()) run.context[k] = v;
    // Not timed (--pairs 0), the loop still holds a pair count of 1 for its own sake: the
    // context says what was timed, beside the "not timed (--pairs 0)" the reports print.
    run.context["pairs"] = o.timed ? o.pairs : 0;
    run.context["warmup"] = o.warmup;
    if (out.fixtures.size() > 1) run.context["fixtures"] = out.fixtures;
  } else if (run.mode == "measurements") {
    const nlohmann::json ctx = measurements.context_of(run.input);  // items() refers to it
    for (auto& [k, v] : ctx.items()) run.context[k] = v;
  }
  run.context["seed"] = o.seed;
  return out;
}

}  // namespace

CaseRun run_cases(const GateFile& gate, const std::vector<Case>& cases, EvidenceProvider* stage_provider) {
  return run_all(&gate, cases, stage_provider);
}

CaseRun case_figures(const std::vector<Case>& cases) { return run_all(nullptr, cases, nullptr); }

}  // namespace ts
