#include "drivers/sweep.hpp"

#include <omp.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <sstream>

#include "core/error.hpp"
#include "core/progress.hpp"
#include "drivers/block_run.hpp"
#include "drivers/gate_on_fixture.hpp"
#include "drivers/run_estimate.hpp"
#include "fixtures/attention_inputs.hpp"
#include "fixtures/fixture.hpp"
#include "gates/accuracy_evidence.hpp"
#include "gates/bootstrap.hpp"
#include "gates/gate_file.hpp"
#include "gates/metrics.hpp"
#include "gates/report.hpp"
#include "kernels_under_test/registry.hpp"
#include "reference/block.hpp"
#include "reference/sage2_presets.hpp"

namespace ts {
namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// The shortest text that reads back as v (1.6, not 1.6000000000000001).
std::string fmt17(double v) {
  char buf[64];
  for (int digits = 1; digits <= 17; ++digits) {
    std::snprintf(buf, sizeof buf, "%.*g", digits, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  return buf;
}

std::string fmt4(const nlohmann::json& v, const char* f = "%.4g") {
  if (!v.is_number()) return "undef";
  char buf[32];
  std::snprintf(buf, sizeof buf, f, v.get<double>());
  return buf;
}

nlohmann::json opt_json(const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); }

std::string spec_for(const SweepOptions& o, double tau) {
  std::string spec = o.backend + (o.backend.find(':') == std::string::npos ? ":" : ",");
  spec += "tau=" + fmt17(tau);
  if (!o.precision.empty()) spec += ",precision=" + o.precision;
  for (const auto& kv : o.params) {
    if (kv.find('=') == std::string::npos || kv.find(',') != std::string::npos)
      throw InputError("--param '" + kv + "' is not one key=value");
    if (kv.rfind("tau=", 0) == 0) throw InputError("--param tau=...: give taus with --tau");
    spec += "," + kv;
  }
  return spec;
}

std::vector<std::string> split_names(const std::string& s) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s + ",") {
    if (c != ',') {
      cur += c;
      continue;
    }
    if (!cur.empty()) out.push_back(cur);
    cur.clear();
  }
  return out;
}

// The stored outputs shown as rows: "auto" those stored with timings (kernels run
// elsewhere), but never the baseline's or the exact reference's own output.
std::vector<std::string> stored_rows(const std::string& fixture, const std::string& which,
                                     const std::vector<std::string>& taken) {
  if (which == "none") return {};
  std::vector<std::string> names;
  const auto outputs = list_group(fixture, "/outputs");
  if (which == "auto") {
    for (const auto& n : outputs)
      if (has_dataset(fixture, "/outputs/" + n + "/attention") && has_dataset(fixture, "/timings/" + n))
        names.push_back(n);
  } else {
    names = split_names(which);
    if (names.empty()) throw InputError("--stored: give auto, none or output names");
    for (const auto& n : names)
      if (!has_dataset(fixture, "/outputs/" + n + "/attention")) {
        std::string list;
        for (const auto& m : outputs) list += (list.empty() ? "" : ", ") + m;
        throw InputError("--stored " + n + ": " + fixture + " has no /outputs/" + n + "/attention (outputs: " +
                         (list.empty() ? "none" : list) + ")");
      }
  }
  std::vector<std::string> out;
  for (const auto& n : names) {
    bool skip = false;
    for (const auto& t : taken) skip = skip || t == "stored:" + n;
    if (!skip) out.push_back(n);
  }
  return out;
}

// A stored exact output is the right answer, but the block runs its own attention.
std::string computed_exact(const std::string& spec) {
  if (spec == "stored:exact") return "exact";
  if (spec == "stored:exact_cuda") return "exact_cuda";
  return spec;
}

// The block's stage set for (linear, attention): reused when the fixture already holds it,
// else run through the block driver (which picks the block's implementation).
struct BlockSet {
  std::string name;
  nlohmann::json run;  // the block driver's report, or {"reused": true}
  std::string table;
};
BlockSet block_set(const std::string& fixture, const std::string& linear, const std::string& recipe,
                   const std::string& attention) {
  BlockOptions bo;
  bo.linear = linear_mode_from_name(linear);
  if (bo.linear == LinearMode::nvfp4) bo.recipe = recipe;
  const std::string name = block_output_name(bo, make_attention_backend(attention, {fixture})->name());
  if (has_dataset(fixture, "/outputs/" + name + "/stages/output"))
    return {name, {{"output", name}, {"reused", true}}, fixture + ": /outputs/" + name + "/stages already stored\n"};
  BlockRunReport rep = run_block_reference(fixture, linear, recipe, attention);
  return {rep.json.at("output").get<std::string>(), rep.json, rep.table};
}

// Per-group figures (worst head, query block, frame) cost another pass over both tensors
// per comparison (block24: 271 M values a side): computed only when a rule reads one; the
// figures the gate reads are the same either way.
bool reads_groups(const GateFile& g) {
  for (const auto& r : g.rules)
    if (r.metric.find("_worst_") != std::string::npos) return true;
  return false;
}

struct Row {
  std::string spec;  // what the candidate is called in the gate run
  std::optional<double> tau;
  nlohmann::json j;
};

}  // namespace

int SweepResult::exit_code() const {
  if (!run) return kPass;
  int rc = run->exit_code();
  if (block && block->exit_code() != 0) rc = 1;
  return rc;
}

SweepResult run_sweep(const std::string& fixture, const SweepOptions& o) {
  const auto t_start = Clock::now();
  if (o.taus.empty()) throw InputError("--tau: give at least one value");
  if (o.block != "auto" && o.block != "off") throw InputError("--block: auto or off, got '" + o.block + "'");
  if (o.pairs < 0) throw InputError("--pairs must not be negative");
  const std::string baseline = o.baseline.empty() ? sage2_default_spec() : o.baseline;
  std::optional<GateFile> gate;
  if (!o.gate.empty()) {
    gate = load_gate(o.gate);
    for (const auto& r : gate->rules)
      if (gate->tensor_of(r) != "attention")
        throw InputError(gate->source + ": rule '" + r.id + "' judges tensor '" + gate->tensor_of(r) +
                         "'; a sweep judges attention rows (the block's stages are judged by the stage gate)");
  }
  GateRunOptions go;
  go.pairs = o.pairs > 0 ? o.pairs : 1;
  go.warmup = o.warmup;
  go.rotate = o.rotate;
  go.seed = o.seed;
  validate(go);
  const bool timed = gate && has_speed_rule(*gate) && o.pairs > 0;

  LoadOptions lo;
  lo.allow_nonfinite = o.allow_nonfinite;
  const Fixture fx = load_fixture(fixture, lo);
  const AttentionProblem problem = attention_problem(fx);
  const BackendContext ctx{fixture};
  // Every spec is built first, so a bad flag fails before minutes of work.
  std::vector<std::string> specs;
  for (double t : o.taus) {
    specs.push_back(spec_for(o, t));
    make_attention_backend(specs.back(), ctx);
  }
  const ExactChoice exact_choice = choose_exact(o.exact, fixture, fx.config);
  make_attention_backend(exact_choice.spec, ctx);
  require_device_for(baseline);
  auto base = make_attention_backend(baseline, ctx);
  for (const auto& sp : specs) require_device_for(sp);
  const std::vector<std::string> stored = stored_rows(fixture, o.stored, {baseline, exact_choice.spec});
  std::vector<std::unique_ptr<AttentionBackend>> stored_backends;
  for (const auto& n : stored) stored_backends.push_back(make_attention_backend("stored:" + n, ctx));
  const bool has_block = has_dataset(fixture, "/block/x");
  const bool run_block = gate && o.block == "auto" && has_block;
  // The block's attention: the baseline's kind where it is computed (a stored output
  // cannot attend the block's own q, k, v).
  const std::string block_attention = base->is_stored() ? sage2_default_spec() : baseline;
  const std::string block_exact = computed_exact(exact_choice.spec);
  {
    const int per_row = timed ? o.warmup + o.pairs : 0;
    const int rows = static_cast<int>(specs.size() + stored.size());
    std::vector<std::pair<std::string, int>> runs = {{exact_choice.spec, 1}, {baseline, 1 + per_row * rows}};
    for (const auto& sp : specs) runs.push_back({sp, 1 + per_row});
    if (run_block) {
      runs.push_back({block_attention, 1});
      runs.push_back({block_exact, 1});
    }
    refuse_slow_cpu(runs, fx.config, SlowGuard::from_env(o.allow_slow), "sweep");
  }
  nlohmann::json wall = {{"load_ms", ms_since(t_start)}};

  Progress progress("sweep", static_cast<int64_t>(specs.size() + stored.size()) + 2);
  auto exact = make_attention_backend(exact_choice.spec, ctx);
  auto t0 = Clock::now();
  const Tensor exact_out = exact->run(problem).out;
  const double exact_ms = ms_since(t0);
  progress.advance();
  t0 = Clock::now();
  const Tensor base_out = run_baseline(*base, problem, baseline);
  const double base_ms = ms_since(t0);
  progress.advance();
  wall["exact_ms"] = exact_ms;  // each backend's own run, as the rows' ms
  wall["baseline_ms"] = base_ms;
  const MetricSet base_vs_exact = compute_metrics(base_out, exact_out);
  const BlockConfig* groups = gate && reads_groups(*gate) ? &fx.config : nullptr;
  const Figures base_exact_figures =
      !gate ? Figures{} : groups ? accuracy_figures(base_out, exact_out, groups) : metric_map(base_vs_exact);
  std::optional<SpeedMeasurer> speed;
  if (timed) speed.emplace(fx, problem, *gate, go);

  SweepResult res;
  res.fixture = fixture;
  if (gate) {
    GateRun& run = res.run.emplace();
    run.gate = *gate;
    run.mode = "fixture";
    run.input = fixture;
    run.baseline = baseline;
    run.columns = {"tau", "density", "rel_l2 vs " + base->name(), "rel_l2 vs exact", "wall ms (not judged)"};
    run.context = {{"fixture", fixture},
                   {"shape", exact_out.shape_string()},
                   {"baseline_backend", base->name()},
                   {"exact", {{"spec", exact_choice.spec}, {"why", exact_choice.why}}},
                   {"baseline_vs_exact", base_vs_exact.to_json()},
                   {"speed", timed ? "timed in " + std::to_string(o.pairs) + " pairs per row, as touchstone gate"
                                   : "not timed (--pairs 0): speed rules on computed rows are missing"},
                   {"seed", o.seed}};
  }
  const std::string gate_arg = gate ? (gate->source.rfind("builtin:", 0) == 0 ? gate->source.substr(8) : gate->source) : "";
  auto no_timing = [&](AttentionBackend& cand) {
    SpeedEvidence s;
    s.missing = std::string("not timed (--pairs 0): one run of ") + (cand.is_stored() ? "the baseline" : "a row") +
                " is no sample (--pairs N, or a stored baseline with /timings)";
    return s;
  };
  // One candidate judged by the gate, the way run_gate_on_fixture judges it.
  auto judge_row = [&](AttentionBackend& cand, const Tensor* out, const std::string& error, const std::string& spec,
                       nlohmann::json& row) {
    Evidence ev;
    ev.candidate = spec;
    ev.error = error;
    if (error.empty()) {
      try {
        add_accuracy_evidence(ev, "attention", *out, base_out, exact_out, base_exact_figures, groups);
        ev.details["backend"] = cand.name();
        if (has_speed_rule(*gate)) {
          // Two stored sides need no run: their /timings are judged as `gate` judges them.
          if (timed) ev.speed = speed->measure(cand, *base);
          else if (cand.is_stored() && base->is_stored()) ev.speed = SpeedMeasurer(fx, problem, *gate, go).measure(cand, *base);
          else ev.speed = no_timing(cand);
          ev.details["speed"] = ev.speed->to_json();
        }
      } catch (const std::exception& e) {
        ev.error = e.what();
      }
    }
    const std::string repro = "touchstone gate --gate " + shell_quote(gate_arg) + " --fixture " + shell_quote(fixture) +
                              " --baseline " + shell_quote(baseline) + " --candidate " + shell_quote(spec);
    CandidateVerdict v = judge(*gate, ev, repro);
    row["verdict"] = verdict_name(v.verdict);
    for (const char* k : {"vs_baseline", "vs_exact"})
      if (ev.details.contains(k)) {
        row[std::string("rel_l2_") + k] = ev.details[k].value("rel_l2", nlohmann::json(nullptr));
        row[std::string("cosine_") + k] = ev.details[k].value("cosine", nlohmann::json(nullptr));
        row["nonfinite"] = ev.details["vs_baseline"].value("nonfinite", nlohmann::json(nullptr));
      }
    nlohmann::json deciding = nlohmann::json::array();
    for (const auto& oc : v.outcomes)
      if (oc.status != RuleStatus::pass && !(oc.status == RuleStatus::missing && oc.optional))
        deciding.push_back(oc.id + ": " + oc.message);
    if (!v.error.empty()) deciding.push_back("error: " + v.error);
    row["deciding"] = deciding;
    return v;
  };
  auto shown = [&](const Row& r) {
    const nlohmann::json& j = r.j;
    return std::vector<std::string>{r.tau ? fmt4(*r.tau, "%g") : "stored",
                                    j.contains("density") ? fmt4(j["density"], "%.4f") : "-",
                                    fmt4(j.value("rel_l2_vs_baseline", nlohmann::json(nullptr))),
                                    fmt4(j.value("rel_l2_vs_exact", nlohmann::json(nullptr))),
                                    j.contains("ms") ? fmt4(j["ms"], "%.0f") : "-"};
  };

  std::vector<Row> rows;
  std::unique_ptr<AttentionBackend> earlier;
  t0 = Clock::now();
  for (size_t i = 0; i < specs.size(); ++i) {
    Row r{specs[i], o.taus[i], {{"tau", o.taus[i]}, {"spec", specs[i]}}};
    auto b = make_attention_backend(specs[i], ctx);
    if (earlier) b->continue_from(*earlier);
    std::string error;
    AttentionResult out;
    const auto tr = Clock::now();
    try {
      out = b->run(problem);
    } catch (const InputError&) {
      throw;
    } catch (const std::exception& e) {
      if (!gate) throw;
      error = e.what();
    }
    r.j["name"] = b->name();
    r.j["ms"] = ms_since(tr);
    if (error.empty()) {
      r.j["density"] = out.stats.contains("density") ? out.stats["density"] : nlohmann::json(nullptr);
      for (const char* k : {"device_ms", "prepare_ms", "density_per_head"})
        if (out.stats.contains(k)) r.j[k] = out.stats[k];
    }
    if (gate) {
      CandidateVerdict v = judge_row(*b, error.empty() ? &out.out : nullptr, error, specs[i], r.j);
      v.shown = shown(r);
      res.run->candidates.push_back(std::move(v));
    } else {
      const MetricSet vb = compute_metrics(out.out, base_out), ve = compute_metrics(out.out, exact_out);
      r.j["rel_l2_vs_baseline"] = opt_json(vb.rel_l2);
      r.j["cosine_vs_baseline"] = opt_json(vb.cosine);
      r.j["rel_l2_vs_exact"] = opt_json(ve.rel_l2);
      r.j["cosine_vs_exact"] = opt_json(ve.cosine);
      r.j["nonfinite"] = vb.nonfinite;
    }
    earlier = std::move(b);
    rows.push_back(std::move(r));
    progress.advance();
  }
  earlier.reset();
  wall["sweep_ms"] = ms_since(t0);
  t0 = Clock::now();
  for (size_t i = 0; i < stored.size(); ++i) {
    Row r{"stored:" + stored[i], std::nullopt, {{"name", stored[i]}, {"spec", "stored:" + stored[i]}}};
    AttentionBackend& b = *stored_backends[i];
    std::string error;
    Tensor out;
    try {
      out = b.run(problem).out;
    } catch (const std::exception& e) {
      if (!gate) throw InputError("stored:" + stored[i] + ": " + e.what());
      error = e.what();
    }
    if (const auto t = b.stored_timings_ms()) {
      r.j["timings_median_ms"] = median_of(*t);
      r.j["timings_clock"] = b.stored_timings_clock();
    }
    if (gate) {
      CandidateVerdict v = judge_row(b, error.empty() ? &out : nullptr, error, r.spec, r.j);
      v.shown = shown(r);
      res.run->candidates.push_back(std::move(v));
    } else {
      const MetricSet vb = compute_metrics(out, base_out), ve = compute_metrics(out, exact_out);
      r.j["rel_l2_vs_baseline"] = opt_json(vb.rel_l2);
      r.j["rel_l2_vs_exact"] = opt_json(ve.rel_l2);
      r.j["nonfinite"] = vb.nonfinite;
    }
    rows.push_back(std::move(r));
    progress.advance();
  }
  wall["stored_ms"] = ms_since(t0);

  nlohmann::json block_j;
  t0 = Clock::now();
  if (gate) {
    if (o.block == "off") {
      res.block_note = "block per-stage chain: not asked (--block off)";
    } else if (!has_block) {
      res.block_note = "block per-stage chain: skipped, " + fixture +
                       " has no block (/block/x; synthesize one with `fixture synth --with-block` or capture one)";
    } else {
      const BlockSet cand = block_set(fixture, "nvfp4", "te", block_attention);
      const BlockSet ref = block_set(fixture, "fp64", "", block_exact);
      res.block = compare_stages(fixture, cand.name, ref.name, {});
      block_j = {{"candidate", cand.run}, {"reference", ref.run}, {"stages", res.block->to_json()}};
    }
    if (!res.block_note.empty()) block_j = {{"skipped", res.block_note}};
  }
  wall["block_ms"] = ms_since(t0);
  wall["total_ms"] = ms_since(t_start);

  nlohmann::json rows_j = nlohmann::json::array(), stored_j = nlohmann::json::array();
  for (const auto& r : rows) (r.tau ? rows_j : stored_j).push_back(r.j);
  res.json = {{"fixture", fixture},
              {"S", problem.q.S},
              {"H", problem.q.H},
              {"D", problem.q.D},
              {"threads", omp_get_max_threads()},
              {"exact", {{"name", exact->name()}, {"ms", exact_ms}, {"spec", exact_choice.spec}, {"why", exact_choice.why}}},
              {"baseline",
               {{"spec", baseline},
                {"name", base->name()},
                {"ms", base_ms},
                {"rel_l2_vs_exact", opt_json(base_vs_exact.rel_l2)},
                {"cosine_vs_exact", opt_json(base_vs_exact.cosine)}}},
              {"rows", rows_j},
              {"stored", stored_j},
              {"wall_ms", wall}};
  if (gate) {
    res.json["gate"] = res.run->to_json();
    res.json["block"] = block_j;
    res.json["exit_code"] = res.exit_code();
  }
  return res;
}

namespace {

// The lines above every rendering: what was run, and the baseline's own distance.
std::vector<std::string> preface(const SweepResult& r) {
  const auto& j = r.json;
  char line[512];
  std::vector<std::string> out;
  std::snprintf(line, sizeof line, "sweep on %s: S=%lld H=%lld D=%lld, %d threads", r.fixture.c_str(),
                (long long)j["S"].get<int64_t>(), (long long)j["H"].get<int64_t>(), (long long)j["D"].get<int64_t>(),
                j["threads"].get<int>());
  out.push_back(line);
  std::snprintf(line, sizeof line, "exact: %s (%s), %.0f ms", j["exact"]["name"].get<std::string>().c_str(),
                j["exact"]["why"].get<std::string>().c_str(), j["exact"]["ms"].get<double>());
  out.push_back(line);
  std::snprintf(line, sizeof line, "baseline %s: rel_l2 vs exact %s, cosine %s, %.0f ms",
                j["baseline"]["name"].get<std::string>().c_str(), fmt4(j["baseline"]["rel_l2_vs_exact"]).c_str(),
                fmt4(j["baseline"]["cosine_vs_exact"], "%.6f").c_str(), j["baseline"]["ms"].get<double>());
  out.push_back(line);
  if (r.run)
    out.push_back("wall ms: one run of each row, for the record; speed is judged only on timing samples (" +
                  r.run->context.value("speed", std::string()) + ")");
  return out;
}

}  // namespace

std::string SweepResult::text() const {
  std::ostringstream o;
  for (const auto& l : preface(*this)) o << l << "\n";
  if (run) {
    o << "\n" << render_terminal(*run);
    o << "\n" << (block ? block->render_table() : block_note + "\n");
    return o.str();
  }
  char line[256];
  std::snprintf(line, sizeof line, "%8s %8s %12s %12s %12s %12s %10s\n", "tau", "density", "rel_l2/base", "cos/base",
                "rel_l2/exact", "cos/exact", "ms");
  o << line;
  for (const auto& r : json["rows"]) {
    std::snprintf(line, sizeof line, "%8g %8s %12s %12s %12s %12s %10.1f\n", r["tau"].get<double>(),
                  fmt4(r["density"], "%.3f").c_str(), fmt4(r["rel_l2_vs_baseline"]).c_str(),
                  fmt4(r["cosine_vs_baseline"], "%.6f").c_str(), fmt4(r["rel_l2_vs_exact"]).c_str(),
                  fmt4(r["cosine_vs_exact"], "%.6f").c_str(), r["ms"].get<double>());
    o << line;
  }
  for (const auto& r : json["stored"]) {
    std::snprintf(line, sizeof line, "%8s %8s %12s %12s %12s %12s %10s  %s\n", "stored", "-",
                  fmt4(r["rel_l2_vs_baseline"]).c_str(), "-", fmt4(r["rel_l2_vs_exact"]).c_str(), "-", "-",
                  r["name"].get<std::string>().c_str());
    o << line;
  }
  return o.str();
}

std::string SweepResult::markdown() const {
  if (!run) throw InputError("a Markdown or HTML report needs --gate (it shows verdicts)");
  std::ostringstream o;
  o << "## touchstone sweep `" << fixture << "`\n\n";
  for (const auto& l : preface(*this)) o << "- " << l << "\n";
  o << "\n" << render_markdown(*run) << "\n### Block: per-stage chain\n\n";
  if (block) o << render_markdown(block->run);
  else o << block_note << "\n";
  return o.str();
}

std::string SweepResult::html() const {
  if (!run) throw InputError("a Markdown or HTML report needs --gate (it shows verdicts)");
  std::vector<std::string> notes = preface(*this);
  std::vector<const GateRun*> runs = {&*run};
  if (block) runs.push_back(&block->run);
  else notes.push_back(block_note);
  return render_html(runs, "touchstone sweep " + fixture, notes);
}

}  // namespace ts
