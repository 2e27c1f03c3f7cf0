#include "drivers/sweep.hpp"

#include <omp.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <sstream>

#include "core/decimal_text.hpp"
#include "core/error.hpp"
#include "core/progress.hpp"
#include "drivers/block_run.hpp"
#include "drivers/gate_on_fixture.hpp"
#include "drivers/run_cases.hpp"
#include "drivers/run_estimate.hpp"
#include "fixtures/attention_inputs.hpp"
#include "fixtures/fixture.hpp"
#include "gates/accuracy_evidence.hpp"
#include "gates/bootstrap.hpp"
#include "gates/gate_file.hpp"
#include "gates/metrics.hpp"
#include "kernels_under_test/registry.hpp"
#include "reference/block.hpp"
#include "reference/sage2_presets.hpp"

namespace ts {
namespace {

using Clock = std::chrono::steady_clock;

double sweep_ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// The shortest text that reads back as v (1.6, not 1.6000000000000001).
std::string fmt4(const nlohmann::json& v, const char* f = "%.4g") {
  if (v.is_string()) return v.get<std::string>();  // NaN, Infinity: figure_json
  if (!v.is_number()) return "undef";
  if (std::isnan(v.get<double>())) return "NaN";
  char buf[32];
  std::snprintf(buf, sizeof buf, f, v.get<double>());
  return buf;
}

nlohmann::json json_or_null(const std::optional<double>& v) { return figure_json(v); }

std::string spec_for(const SweepOptions& o, double tau) {
  std::string spec = o.backend + (o.backend.find(':') == std::string::npos ? ":" : ",");
  spec += "tau=" + shortest_decimal(tau);
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

}  // namespace

int SweepResult::exit_code() const {
  if (!run) return kPass;
  int rc = run->exit_code();
  if (block && block->exit_code() != 0) rc = 1;
  return rc;
}

namespace {

// What a sweep row shows beside its verdict (GateRun::columns).
std::vector<std::string> shown(const CaseResult& r) {
  const CaseFigures& f = r.figures;
  auto num = [](const std::optional<double>& v, const char* fmt) { return v ? fmt4(*v, fmt) : std::string("undef"); };
  return {r.c.tau ? shortest_decimal(*r.c.tau) : "stored", f.density ? fmt4(*f.density, "%.4f") : "-",
          num(f.rel_l2_vs_baseline, "%.4g"), num(f.rel_l2_vs_exact, "%.4g"),
          f.wall_ms ? fmt4(*f.wall_ms, "%.0f") : "-"};
}

// One row of `sweep --json`.
nlohmann::json row_json(const CaseResult& r, const CandidateVerdict* v) {
  const CaseFigures& f = r.figures;
  nlohmann::json j = {{"spec", r.c.candidate}, {"name", f.backend}};
  if (r.c.tau) {
    j["tau"] = *r.c.tau;
    j["ms"] = json_or_null(f.wall_ms);
    j["density"] = json_or_null(f.density);
    for (const char* k : {"device_ms", "prepare_ms", "density_per_head"})
      if (f.stats.contains(k)) j[k] = f.stats[k];
  } else if (f.timings_median_ms) {
    j["timings_median_ms"] = *f.timings_median_ms;
    j["timings_clock"] = f.timings_clock;
  }
  j["rel_l2_vs_baseline"] = json_or_null(f.rel_l2_vs_baseline);
  j["cosine_vs_baseline"] = json_or_null(f.cosine_vs_baseline);
  j["rel_l2_vs_exact"] = json_or_null(f.rel_l2_vs_exact);
  j["cosine_vs_exact"] = json_or_null(f.cosine_vs_exact);
  j["nonfinite"] = json_or_null(f.nonfinite);
  if (f.stats.contains("error")) j["error"] = f.stats["error"];
  if (v) {
    j["verdict"] = verdict_name(v->verdict);
    nlohmann::json deciding = nlohmann::json::array();
    for (const auto& oc : v->outcomes)
      if (oc.status != RuleStatus::pass && !(oc.status == RuleStatus::missing && oc.optional))
        deciding.push_back(oc.id + ": " + oc.message);
    if (!v->error.empty()) deciding.push_back("error: " + v->error);
    j["deciding"] = deciding;
  }
  return j;
}

}  // namespace

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
  CaseOptions co;
  co.pairs = o.pairs > 0 ? o.pairs : 1;
  co.timed = o.pairs > 0;
  co.warmup = o.warmup;
  co.rotate = o.rotate;
  co.seed = o.seed;
  co.allow_nonfinite = o.allow_nonfinite;
  co.allow_slow = o.allow_slow;
  co.accuracy_only = o.accuracy_only;
  co.exact = o.exact;
  co.group_figures = false;  // only when a rule reads them: another pass over both tensors per row
  co.command = "sweep";

  // The rows as cases: each tau, then the stored real kernels.
  CaseRequest rows;
  rows.input = fixture;
  rows.baseline = baseline;
  rows.gate_arg = gate ? gate_argument(*gate) : "";
  rows.options = co;
  for (double t : o.taus) {
    rows.candidates.push_back(spec_for(o, t));
    rows.taus.push_back(t);
  }
  std::vector<Case> cases = make_cases(rows);
  {
    LoadOptions lo;
    lo.allow_nonfinite = o.allow_nonfinite;
    lo.values = false;  // checked here, read once by the case loop (at block24 a float64 copy is 6.5 GB)
    const ExactChoice ex = choose_exact(o.exact, fixture, load_fixture(fixture, lo).config);
    CaseRequest stored = rows;
    stored.candidates.clear();
    stored.taus.clear();
    for (const auto& n : stored_rows(fixture, o.stored, {baseline, ex.spec})) stored.candidates.push_back("stored:" + n);
    for (auto& c : make_cases(stored)) cases.push_back(std::move(c));
  }
  const bool has_block = has_dataset(fixture, "/block/x");
  // The block's attention: the baseline's kind where it is computed (a stored output
  // cannot attend the block's own q, k, v).
  const std::string block_attention = is_stored_spec(baseline) ? sage2_default_spec() : baseline;
  nlohmann::json wall = {{"prepare_ms", sweep_ms_since(t_start)}};

  auto t0 = Clock::now();
  CaseRun cr = gate ? run_cases(*gate, cases) : case_figures(cases);
  wall["cases_ms"] = sweep_ms_since(t0);
  const nlohmann::json refs = cr.reference_runs.value(fixture, nlohmann::json::object());
  const nlohmann::json exact_run = refs.value("exact", nlohmann::json::object());
  const nlohmann::json base_run = refs.contains("baselines") ? refs["baselines"].value(baseline, nlohmann::json::object())
                                                             : nlohmann::json::object();
  const nlohmann::json ctx = cr.fixtures.value(fixture, nlohmann::json::object());

  SweepResult res;
  res.fixture = fixture;
  if (gate) {
    GateRun& run = res.run.emplace(std::move(cr.run));
    run.columns = {"tau", "density", "rel_l2 vs " + base_run.value("name", baseline), "rel_l2 vs exact",
                   "wall ms (not judged)"};
    // Say what was timed: rows of an emulation (sol) or against one are not, unless the gate
    // asks (time_emulations), whatever --pairs says.
    const bool emulated = !gate->time_emulations && (is_emulation_spec(baseline) || is_emulation_spec(o.backend));
    run.context["speed"] = !co.timed ? "not timed (--pairs 0): speed rules on computed rows are missing"
                           : emulated
                               ? "computed rows not timed: the " +
                                     std::string(is_emulation_spec(o.backend) ? "rows are" : "baseline is") +
                                     " an emulation, whose time is not a kernel's (unless the gate sets "
                                     "time_emulations)"
                               : "timed in " + std::to_string(o.pairs) + " pairs per row, as touchstone gate";
    for (size_t i = 0; i < run.candidates.size(); ++i) run.candidates[i].shown = shown(cr.results[i]);
  }

  t0 = Clock::now();
  if (gate) {
    if (o.block == "off") {
      res.block_note = "block per-stage chain: not asked (--block off)";
    } else if (!has_block) {
      res.block_note = "block per-stage chain: skipped, " + fixture +
                       " has no block (/block/x; synthesize one with `fixture synth --with-block` or capture one)";
    } else {
      const std::string exact_spec = ctx.contains("exact") ? ctx["exact"].value("spec", std::string("exact")) : "exact";
      const BlockSet cand = block_set(fixture, o.block_linear, o.block_recipe, block_attention);
      const BlockSet ref = block_set(fixture, "fp64", "", computed_exact(exact_spec));
      res.block = compare_stages(fixture, cand.name, ref.name, {});
      res.block_runs = {{"candidate", cand.run}, {"reference", ref.run}};
    }
  }
  wall["block_ms"] = sweep_ms_since(t0);
  wall["total_ms"] = sweep_ms_since(t_start);

  nlohmann::json rows_j = nlohmann::json::array(), stored_j = nlohmann::json::array();
  for (size_t i = 0; i < cr.results.size(); ++i) {
    const CandidateVerdict* v = res.run ? &res.run->candidates[i] : nullptr;
    (cr.results[i].c.tau ? rows_j : stored_j).push_back(row_json(cr.results[i], v));
  }
  const nlohmann::json bve = base_run.value("vs_exact", nlohmann::json::object());
  res.json = {{"fixture", fixture},
              {"threads", omp_get_max_threads()},
              {"exact",
               {{"name", exact_run.value("name", std::string())},
                {"ms", exact_run.value("ms", 0.0)},
                {"spec", ctx.contains("exact") ? ctx["exact"].value("spec", std::string()) : ""},
                {"why", ctx.contains("exact") ? ctx["exact"].value("why", std::string()) : ""}}},
              {"baseline",
               {{"spec", baseline},
                {"name", base_run.value("name", baseline)},
                {"ms", base_run.value("ms", 0.0)},
                {"rel_l2_vs_exact", bve.value("rel_l2", nlohmann::json(nullptr))},
                {"cosine_vs_exact", bve.value("cosine", nlohmann::json(nullptr))}}},
              {"rows", rows_j},
              {"stored", stored_j},
              {"wall_ms", wall}};
  for (const char* k : {"S", "H", "D"}) res.json[k] = refs.value(k, nlohmann::json(nullptr));
  if (gate) {
    res.json["gate"] = res.run->to_json();
    res.json["exit_code"] = res.exit_code();
  }
  return res;
}

}  // namespace ts
