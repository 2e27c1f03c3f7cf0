#include "drivers/triage.hpp"
#include "drivers/case.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>

#include "core/error.hpp"
#include "core/progress.hpp"
#include "drivers/gate_on_fixture.hpp"
#include "drivers/run_estimate.hpp"
#include "drivers/stage_comparison.hpp"
#include "drivers/triage_sol.hpp"
#include "fixtures/attention_inputs.hpp"
#include "fixtures/fixture.hpp"
#include "gates/metrics.hpp"
#include "gates/triage_maps.hpp"
#include "kernels_under_test/registry.hpp"
#include "reference/attention_sol.hpp"
#include "reference/backend_params.hpp"
#include "reference/sage2_presets.hpp"

namespace ts {
namespace {

std::string tr_g9(double v) {
  char b[40];
  std::snprintf(b, sizeof b, "%.9g", v);
  return b;
}
std::string tr_onoff(const nlohmann::json& v) { return v.is_boolean() ? (v.get<bool>() ? "on" : "off") : v.dump(); }

// key=value pairs of a spec, in order, for variants with one knob changed.
struct TrSpec {
  std::string kind;
  std::vector<std::pair<std::string, std::string>> kv;
  std::string text() const {
    std::string s = kind;
    for (size_t i = 0; i < kv.size(); ++i) s += (i ? "," : ":") + kv[i].first + "=" + kv[i].second;
    return s;
  }
  TrSpec with(const std::string& k, const std::string& v) const {
    TrSpec o = *this;
    for (auto& p : o.kv)
      if (p.first == k) {
        p.second = v;
        return o;
      }
    o.kv.push_back({k, v});
    return o;
  }
  std::string get(const std::string& k) const {
    for (const auto& p : kv)
      if (p.first == k) return p.second;
    return "";
  }
};

std::optional<TrSpec> tr_spec_from_params(const nlohmann::json& p) {
  if (!p.is_object() || !p.contains("backend") || !p["backend"].is_string()) return std::nullopt;
  const std::string b = p["backend"];
  auto str = [&](const char* k) { return p.contains(k) ? (p[k].is_string() ? p[k].get<std::string>() : p[k].is_number_integer() ? std::to_string(p[k].get<long long>()) : p[k].is_number() ? tr_g9(p[k].get<double>()) : tr_onoff(p[k])) : std::string(); };
  TrSpec s;
  std::vector<const char*> keys;
  if (b == "sol" || b == "sol_cuda") {
    s.kind = "sol";
    keys = {"tau", "block_q", "block_k", "selector", "topk", "cdf", "compensation", "precision", "round_out"};
  } else if (b == "sage2" || b == "sage2_cuda") {
    s.kind = "sage2";
    keys = {"preset", "granularity", "blkq", "warpq", "blkk", "warpk", "key_block", "accum", "scale_max",
            "smooth_k", "quant_qk", "quant_v", "round_p", "round_out"};
  } else {
    return std::nullopt;
  }
  for (const char* k : keys)
    if (p.contains(k)) s.kv.push_back({k, str(k)});
  return s;
}

nlohmann::json tr_params_of(AttentionBackend& b) {
  nlohmann::json p = b.params();
  if (p.contains("stored_params")) {
    const auto& sp = p["stored_params"];
    if (sp.is_string()) {
      try {
        return nlohmann::json::parse(sp.get<std::string>());
      } catch (const std::exception&) {
        return nlohmann::json::object();
      }
    }
    return sp;
  }
  return p;
}

Tensor tr_run(AttentionBackend& b, const AttentionProblem& p, const std::string& spec, AttentionResult* full = nullptr) {
  try {
    AttentionResult r = b.run(p);
    if (full) *full = r;
    return r.out;
  } catch (const InputError&) {
    throw;
  } catch (const std::exception& e) {
    throw InputError("backend '" + spec + "' failed: " + e.what());
  }
}

nlohmann::json tr_where_json(const MetricBreakdown& b) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [k, g] : worst_group_map(b)) j[k] = g.to_json();
  return j;
}

// The block's stage chain: the candidate's stage set against the baseline's,
// with exact's when stored, and the maps of the first stage out of bounds.
nlohmann::json tr_block_section(const std::string& fx, const Fixture& f, const std::string& cand,
                             const std::string& base, const std::string& exact, size_t top) {
  auto stored_name = [](const std::string& s) {
    const auto spec = BackendSpec::try_parse(s);
    return spec && spec->is_stored() ? spec->argument() : std::string();
  };
  auto has_stages = [&](const std::string& n) { return !n.empty() && !list_group(fx, "/outputs/" + n + "/stages").empty(); };
  const std::string a = stored_name(cand);
  if (!has_stages(a))
    return {{"skipped", "the candidate " + cand + " has no stage set (/outputs/NAME/stages): the block chain is "
                        "judged on stored stage sets (touchstone reference F --block)"}};
  std::string b = stored_name(base);
  if (!has_stages(b)) b = list_group(fx, "/block/stages").empty() ? "" : "observed";
  if (b.empty()) return {{"skipped", "no baseline stage set: the baseline is not a stored output with stages and the fixture has no /block/stages"}};
  StageComparisonOptions so;
  const std::string e = stored_name(exact);
  if (has_stages(e)) so.exact = e;
  const StageComparison c = compare_stages(fx, a, b, so);
  nlohmann::json j{{"candidate_set", a}, {"baseline_set", b}, {"exact_set", so.exact.empty() ? nlohmann::json() : nlohmann::json(so.exact)},
                   {"first_failing", c.first_failing}, {"first_inconclusive", c.first_inconclusive}};
  nlohmann::json chain = nlohmann::json::array();
  for (const auto& r : c.rows) {
    nlohmann::json row{{"stage", r.stage}, {"status", r.status()}};
    if (r.metrics) {
      row["rel_l2"] = r.metrics->rel_l2 ? nlohmann::json(*r.metrics->rel_l2) : nlohmann::json();
      row["max_abs"] = r.metrics->max_abs;
    }
    if (r.verdict)
      for (const auto& o : r.verdict->outcomes)
        if (o.status == RuleStatus::fail) row["failing"].push_back(o.id + ": " + o.message);
    chain.push_back(row);
  }
  j["chain"] = chain;
  const std::string st = !c.first_failing.empty() ? c.first_failing : c.first_inconclusive;
  if (!st.empty()) {
    auto read_set = [&](const std::string& set) {
      return read_tensor(fx, set == "observed" ? "/block/stages/" + st : "/outputs/" + set + "/stages/" + st);
    };
    Tensor ta = read_set(a), tr = read_set(so.exact.empty() ? b : so.exact);
    // [S, C] stages are mapped as [S, heads, C / heads] channel groups.
    auto as3 = [&](Tensor t) {
      if (t.rank() == 2 && f.config.heads > 0 && t.dim(1) % f.config.heads == 0)
        t.shape = {t.dim(0), f.config.heads, t.dim(1) / f.config.heads};
      return t;
    };
    ta = as3(ta);
    tr = as3(tr);
    if (ta.rank() == 3 && ta.shape == tr.shape && ta.dim(0) == f.config.tokens()) {
      const auto maps = error_maps(ta, tr, f.config);
      nlohmann::json mj = nlohmann::json::array();
      for (const auto& m : maps) mj.push_back(m.to_json());
      j["stage_maps"] = {{"stage", st}, {"against", so.exact.empty() ? b : so.exact},
                         {"note", "[S, C] stages in heads x C/heads channel groups"},
                         {"maps", mj}, {"ranked", rank_cells(maps, nullptr, top)},
                         {"worst_elements", worst_elements(ta, tr, nullptr, f.config, top)}};
    }
  }
  return j;
}

// The slice a bug report needs: the heads of the worst cells and the whole
// latent frames (or the conditioning segment) that hold the worst query block.
nlohmann::json tr_slice_of(const BlockConfig& c, const nlohmann::json& ranked) {
  std::vector<int64_t> heads;
  int64_t qb = 0;
  if (ranked.contains("head_x_qblock")) {
    const auto& w = ranked["head_x_qblock"]["worst"];
    if (!w.empty()) qb = w[0]["col_index"].get<int64_t>();
    for (const auto& cell : w) {
      const int64_t h = cell["row_index"].get<int64_t>();
      if (std::find(heads.begin(), heads.end(), h) == heads.end() && heads.size() < 2) heads.push_back(h);
    }
  }
  if (heads.empty()) heads.push_back(0);
  std::sort(heads.begin(), heads.end());
  const int64_t S = c.tokens(), s0 = qb * 128, s1 = std::min(S, s0 + 128);
  int64_t lo = s0, hi = s1;
  for (const auto& seg : c.segments) {
    if (s0 >= seg.end() || s1 <= seg.start) continue;
    if (!seg.video) {
      lo = std::min(lo, seg.start);
      hi = std::max(hi, seg.end());
    } else if (c.token_order == "thw") {
      const int64_t per = std::max<int64_t>(1, c.grid_h * c.grid_w);
      lo = std::min(lo, seg.start + (std::max(s0, seg.start) - seg.start) / per * per);
      hi = std::max(hi, std::min(seg.end(), seg.start + ((std::min(s1, seg.end()) - seg.start + per - 1) / per) * per));
    } else {
      lo = std::min(lo, seg.start);
      hi = std::max(hi, seg.end());
    }
  }
  // A fixture needs a whole latent frame: a slice of conditioning tokens takes
  // the last frame before them along.
  bool video = false;
  for (const auto& seg : c.segments) video |= seg.video && seg.start < hi && seg.end() > lo;
  if (!video)
    for (const auto& seg : c.segments)
      if (seg.video && seg.end() <= lo) {
        const int64_t per = std::max<int64_t>(1, c.grid_h * c.grid_w);
        lo = c.token_order == "thw" && seg.length >= per ? seg.end() - per : seg.start;
      }
  if (!video && lo == s0)
    for (const auto& seg : c.segments)
      if (seg.video) hi = std::max(hi, seg.end()), lo = std::min(lo, seg.start);
  std::string hs;
  for (int64_t h : heads) hs += (hs.empty() ? "" : ",") + std::to_string(h);
  return {{"heads", hs}, {"tokens", std::to_string(lo) + ":" + std::to_string(hi)}};
}

// A stored output of the host emulation whose params equal those `spec`
// would write: reading it is the same bits as running it (the emulations are
// deterministic), at the cost of a read. "" when there is none.
std::string tr_stored_twin(const std::string& fx, const std::string& spec, const std::string& not_this) {
  const nlohmann::json want = make_attention_backend(spec, BackendContext{fx})->params();
  for (const auto& name : list_group(fx, "/outputs")) {
    const std::string ds = "/outputs/" + name + "/attention";
    if (name == not_this || !has_dataset(fx, ds)) continue;
    const nlohmann::json a = read_attrs(fx, ds);
    if (!a.contains("params") || !a["params"].is_string() || a.contains("extracted_from")) continue;
    try {
      if (nlohmann::json::parse(a["params"].get<std::string>()) == want) return name;
    } catch (const std::exception&) {
    }
  }
  return "";
}

// sol's routing for `spec` without running its attention (O(S·H·D)): the
// route mask [H, QB, VB] and video blocks [VB, 2], as dump=on stores them.
std::pair<Tensor, Tensor> tr_sol_routing(const AttentionProblem& p, const std::string& spec) {
  BackendParams bp = BackendParams::parse(spec);
  std::string name;
  const SolConfig cfg = sol_config_from(bp, &name);
  const SolPrepared pr = sol_prepare(p, cfg);
  Tensor mask({pr.H, pr.QB, pr.VB}, DType::u8), vb({pr.VB, 2}, DType::i64);
  for (size_t i = 0; i < pr.mask.size(); ++i) mask.data[i] = pr.mask[i];
  for (int64_t j = 0; j < pr.VB; ++j) {
    const SolKeyBlock& b = pr.blocks[size_t(pr.video_block_ids[size_t(j)])];
    vb.data[size_t(2 * j)] = double(b.start);
    vb.data[size_t(2 * j + 1)] = double(b.length);
  }
  return {mask, vb};
}

}  // namespace

std::string emulation_spec_of(const nlohmann::json& params) {
  const auto s = tr_spec_from_params(params);
  return s ? s->text() : "";
}

nlohmann::json run_triage(const std::string& fx_path, const TriageOptions& o) {
  if (o.candidate.empty()) throw InputError("triage needs --candidate SPEC");
  if (o.top < 1) throw InputError("--top must be at least 1");
  const std::string base_spec = o.baseline.empty() ? sage2_default_spec() : o.baseline;
  for (const auto& s : {o.candidate, base_spec, o.against})
    if (!s.empty()) require_device_for(s);
  const Fixture fx = load_fixture(fx_path);
  const AttentionProblem problem = attention_problem(fx);
  const BackendContext ctx{fx_path};
  const ExactChoice ex = choose_exact(o.exact, fx_path, fx.config);
  auto exact_b = make_attention_backend(ex.spec, ctx);
  auto cand_b = make_attention_backend(o.candidate, ctx);
  auto base_b = make_attention_backend(base_spec, ctx);
  std::unique_ptr<AttentionBackend> ag_b;
  if (!o.against.empty()) ag_b = make_attention_backend(o.against, ctx);

  // What the decomposition will run, known before anything runs.
  std::optional<TrSpec> emu = o.decompose ? tr_spec_from_params(tr_params_of(*cand_b)) : std::nullopt;
  // A sliced output (fixture extract) was computed on a longer sequence: the
  // slice's own emulation is another problem, so it explains nothing.
  std::string no_decompose_why = o.decompose ? "" : "--no-decompose";
  if (emu && cand_b->is_stored()) {
    const nlohmann::json bp = cand_b->params();
    if (bp.contains("dataset") && read_attrs(fx_path, bp["dataset"].get<std::string>()).contains("extracted_from")) {
      emu.reset();
      no_decompose_why = o.candidate + " was sliced by fixture extract from an output of the full sequence; "
                         "decompose it on the fixture it came from";
    }
  }
  std::vector<std::pair<std::string, int>> runs = {{ex.spec, 1}, {base_spec, 1}, {o.candidate, 1}};
  if (ag_b) runs.push_back({o.against, 1});
  if (emu && emu->kind == "sage2") runs.push_back({"sage2", 7});
  // sol's dense run and the float64 score pass of the missed mass cost about two dense runs.
  if (emu && emu->kind == "sol") runs.push_back({"exact", 2});
  refuse_slow_cpu(runs, fx.config, SlowGuard::from_env(o.allow_slow), "triage");

  const std::string fx_arg = o.fixture_arg.empty() ? fx_path : o.fixture_arg;
  Progress progress("triage", 4 + (ag_b ? 1 : 0) + (emu ? (emu->kind == "sage2" ? 7 : 3) : 0));
  const Tensor exact = tr_run(*exact_b, problem, ex.spec);
  progress.advance();
  const Tensor base = tr_run(*base_b, problem, base_spec);
  progress.advance();
  AttentionResult cand_res;
  // A computed sol candidate is the emulation itself (no separate emulation run).
  const bool sol_computed = emu && emu->kind == "sol" && BackendSpec::parse(o.candidate).kind_name() == "sol";
  const Tensor cand = tr_run(*cand_b, problem, o.candidate, &cand_res);
  progress.advance();
  if (cand.shape != exact.shape)
    throw InputError("candidate '" + o.candidate + "' gives " + cand.shape_string() + ", exact " + exact.shape_string());
  const BlockConfig& cfg = fx.config;

  nlohmann::json j;
  j["schema"] = "touchstone.triage/1";
  j["fixture"] = fx_arg;
  j["shape"] = exact.shape_string();
  j["candidate"] = {{"spec", o.candidate}, {"backend", cand_b->name()}, {"params", tr_params_of(*cand_b)}};
  if (!cand_res.stats.empty()) j["candidate"]["stats"] = cand_res.stats;
  j["baseline"] = {{"spec", base_spec}, {"backend", base_b->name()}};
  j["exact"] = {{"spec", ex.spec}, {"why", ex.why}};
  const MetricBreakdown ce = compute_breakdown(cand, exact, cfg), be = compute_breakdown(base, exact, cfg);
  j["metrics"] = {{"candidate_vs_exact", ce.overall.to_json()},
                  {"baseline_vs_exact", be.overall.to_json()},
                  {"candidate_vs_baseline", compute_metrics(cand, base).to_json()}};
  j["worst_groups_vs_exact"] = {{"candidate", tr_where_json(ce)}, {"baseline", tr_where_json(be)}};
  j["worst_elements"] = worst_elements(cand, exact, &base, cfg, o.top);
  j["nonfinite"] = nonfinite_runs(cand, cfg);
  const auto maps = error_maps(cand, exact, cfg), floor = error_maps(base, exact, cfg);
  nlohmann::json mj = nlohmann::json::array(), fj = nlohmann::json::array();
  for (const auto& m : maps) mj.push_back(m.to_json());
  for (const auto& m : floor) fj.push_back(m.to_json());
  j["maps"] = {{"against", "exact"}, {"candidate", mj}, {"baseline", fj}};
  j["ranked_cells"] = rank_cells(maps, &floor, o.top);
  progress.advance();

  if (ag_b) {
    const Tensor ag = tr_run(*ag_b, problem, o.against);
    if (ag.shape != exact.shape) throw InputError("--against '" + o.against + "' gives " + ag.shape_string());
    const auto amaps = error_maps(ag, exact, cfg), dmaps = error_maps(cand, ag, cfg);
    nlohmann::json a;
    a["spec"] = o.against;
    a["candidate_vs_against"] = compute_metrics(cand, ag).to_json();
    a["against_vs_exact"] = compute_metrics(ag, exact).to_json();
    a["differing_elements"] = [&] {
      int64_t n = 0;
      for (size_t i = 0; i < cand.data.size(); ++i) n += !(cand.data[i] == ag.data[i]);
      return n;
    }();
    // Where they differ most, with the values of both and exact's.
    nlohmann::json el = worst_elements(cand, ag, &exact, cfg, o.top);
    for (auto& e : el) {
      e["against"] = e["exact"];
      e["exact"] = e["baseline"];
      e.erase("baseline");
    }
    a["worst_differences"] = el;
    a["ranked_differences"] = rank_cells(dmaps, nullptr, o.top);
    nlohmann::json closer = nlohmann::json::object();
    for (size_t m = 0; m < maps.size(); ++m) {
      int nc = 0, na = 0, eq = 0;
      nlohmann::json cells = nlohmann::json::array();
      for (size_t i = 0; i < maps[m].rel_l2.size(); ++i) {
        const auto x = maps[m].rel_l2[i], y = amaps[m].rel_l2[i];
        if (!x || !y) continue;
        const bool xn = std::isnan(*x), yn = std::isnan(*y);
        const std::string w = (xn && yn) || *x == *y ? "equal" : (yn || (!xn && *x < *y)) ? "candidate" : "against";
        (w == "equal" ? eq : w == "candidate" ? nc : na)++;
        cells.push_back(w);
      }
      closer[maps[m].name] = {{"candidate_closer", nc}, {"against_closer", na}, {"equal", eq}, {"cells", cells}};
    }
    a["closer_to_exact"] = closer;
    a["maps_against_vs_exact"] = nlohmann::json::array();
    for (const auto& m : amaps) a["maps_against_vs_exact"].push_back(m.to_json());
    j["against"] = a;
    progress.advance();
  }

  if (emu && emu->kind == "sol") {
    nlohmann::json d;
    d["emulation"] = emu->text();
    const TrSpec full = *emu;
    nlohmann::json reused = nlohmann::json::array();
    auto run_spec = [&](const TrSpec& s, const std::string& not_this = "") {
      const std::string twin = tr_stored_twin(fx_path, s.text(), not_this);
      if (!twin.empty()) reused.push_back({{"variant", s.text()}, {"stored", twin}});
      const std::string spec = twin.empty() ? s.text() : "stored:" + twin;
      auto b = make_attention_backend(spec, ctx);
      const Tensor t = tr_run(*b, problem, spec);
      progress.advance();
      return t;
    };
    const Tensor dense = run_spec(full.with("tau", "-100").with("selector", "zscore"));
    const bool comp = full.get("compensation") != "off";
    // A stored output of the host emulation itself is its own emulation.
    const std::string cand_name = cand_b->is_stored() ? o.candidate.substr(7) : "";
    const bool is_emulation = sol_computed || tr_params_of(*cand_b).value("backend", std::string()) == "sol";
    const Tensor routed = is_emulation ? cand : run_spec(full, cand_name);
    Tensor nocomp;
    if (comp) nocomp = run_spec(full.with("compensation", "off"));
    d["reused_stored_outputs"] = reused;
    ErrorChain ch;
    ch.names.push_back("quantisation (dense, routing forced: tau=-100)");
    ch.outputs.push_back(&dense);
    ch.names.push_back(comp ? "routing (unrouted blocks dropped)" : "routing");
    ch.outputs.push_back(comp ? &nocomp : &routed);
    if (comp) {
      ch.names.push_back("summary compensation (on vs off)");
      ch.outputs.push_back(&routed);
    }
    if (!is_emulation) {
      ch.names.push_back("kernel vs its emulation");
      ch.outputs.push_back(&cand);
    }
    d["chain"] = decompose_chain(exact, ch);
    const int64_t bq = std::stoll(full.get("block_q").empty() ? "128" : full.get("block_q"));
    {
      const auto [route_mask, video_blocks] = tr_sol_routing(problem, full.text());
      const std::vector<double> miss = sol_missed_mass(problem, route_mask, video_blocks, bq);
      const std::vector<double> route_err = cell_norm_ratio(comp ? nocomp : routed, dense, exact, bq);
      const std::vector<double> total_err = cell_norm_ratio(cand, exact, exact, bq);
      const auto r1 = pearson(miss, route_err), r2 = pearson(miss, total_err);
      const int64_t QB = (cfg.tokens() + bq - 1) / bq;
      nlohmann::json cells = nlohmann::json::array();
      for (int64_t h = 0; h < cfg.heads; ++h)
        for (int64_t i = 0; i < QB; ++i)
          cells.push_back({{"head", h}, {"qblock", i}, {"missed_mass", miss[size_t(h * QB + i)]},
                           {"routing_rel_l2", route_err[size_t(h * QB + i)]}});
      double mean_miss = 0;
      for (double m : miss) mean_miss += m;
      // Computed here, not in a lambda: clang 14 cannot capture structured bindings.
      double mask_sum = 0;
      for (double x : route_mask.data) mask_sum += x;
      const nlohmann::json density =
          route_mask.data.empty() ? nlohmann::json() : nlohmann::json(mask_sum / double(route_mask.data.size()));
      d["routing"] = {{"tau", full.get("tau")}, {"selector", full.get("selector")},
                      {"density", density},
                      {"mean_missed_mass", miss.empty() ? 0.0 : mean_miss / double(miss.size())},
                      {"correlation_missed_mass_vs_routing_error", r1 ? nlohmann::json(*r1) : nlohmann::json()},
                      {"correlation_missed_mass_vs_total_error", r2 ? nlohmann::json(*r2) : nlohmann::json()},
                      {"cells", cells},
                      {"definition", "per (head, query block): mean over its rows of the float64 softmax mass on the "
                                     "video blocks the routing left out; routing error = ||o_nocomp - o_dense|| / "
                                     "||exact|| over the cell; Pearson correlation over the H x QB cells"}};
    }
    j["decomposition"] = d;
  } else if (emu && emu->kind == "sage2") {
    nlohmann::json d;
    d["emulation"] = emu->text();
    // scale_max pinned: it follows accum unless given (docs/emulation.md).
    const TrSpec full = emu->with("scale_max", emu->get("scale_max"));
    nlohmann::json reused = nlohmann::json::array();
    const std::string cand_name = cand_b->is_stored() ? o.candidate.substr(7) : "";
    auto run_spec = [&](const TrSpec& s) {
      const std::string twin = tr_stored_twin(fx_path, s.text(), cand_name);
      if (!twin.empty()) reused.push_back({{"variant", s.text()}, {"stored", twin}});
      const std::string spec = twin.empty() ? s.text() : "stored:" + twin;
      auto b = make_attention_backend(spec, ctx);
      const Tensor t = tr_run(*b, problem, spec);
      progress.advance();
      return t;
    };
    const bool is_emulation = !cand_b->is_stored() || tr_params_of(*cand_b).value("backend", std::string()) == "sage2";
    const Tensor fullo = is_emulation ? cand : run_spec(full);
    d["reused_stored_outputs"] = reused;
    const std::vector<std::pair<std::string, TrSpec>> sw = {
        {"Q/K INT8", full.with("quant_qk", "off")},
        {"P FP8", full.with("round_p", "off")},
        {"V FP8", full.with("quant_v", "off")},
        {"accumulator (" + full.get("accum") + " -> fp32)", full.with("accum", "fp32")},
        {"output bf16", full.with("round_out", "off")}};
    std::vector<Tensor> outs;
    outs.reserve(sw.size());
    for (const auto& [n, s] : sw) outs.push_back(run_spec(s));
    const Tensor fl = run_spec(full.with("quant_qk", "off").with("round_p", "off").with("quant_v", "off")
                                   .with("accum", "fp32").with("round_out", "off"));
    std::vector<std::pair<std::string, const Tensor*>> without;
    for (size_t i = 0; i < sw.size(); ++i) without.push_back({sw[i].first, &outs[i]});
    d["one_off"] = decompose_one_off(exact, fullo, fl, without);
    if (!is_emulation) d["kernel_vs_emulation"] = compute_metrics(cand, fullo).to_json();
    j["decomposition"] = d;
  } else {
    j["decomposition"] = {{"skipped", no_decompose_why.empty() ? "touchstone emulates sol and sage2 candidates (computed, or stored "
                                                    "with their params); " + o.candidate + " is neither"
                                                  : no_decompose_why}};
  }

  if (has_dataset(fx_path, "/block/x") || !list_group(fx_path, "/block").empty())
    j["block"] = tr_block_section(fx_path, fx, o.candidate, base_spec, ex.spec, o.top);
  else
    j["block"] = {{"skipped", fx_arg + " has no block"}};

  // The repro: this triage in one line, and a slice small enough to attach.
  const nlohmann::json sl = tr_slice_of(cfg, j["ranked_cells"]);
  std::vector<std::string> switches;
  if (!o.decompose) switches.push_back("--no-decompose");
  if (o.allow_slow) switches.push_back("--allow-slow");
  const std::string line =
      command_line({"triage", fx_arg},
                   {{"--candidate", o.candidate}, {"--baseline", base_spec}, {"--exact", o.exact},
                    {"--against", o.against}, {"--top", o.top == TriageOptions{}.top ? "" : std::to_string(o.top)}},
                   switches);
  const std::string cand_name = cand_b->is_stored() ? o.candidate : "stored:" + cand_b->name();
  std::vector<std::pair<std::string, std::string>> extract_flags = {{"--heads", sl["heads"].get<std::string>()},
                                                                    {"--tokens", sl["tokens"].get<std::string>()}};
  if (!cand_b->is_stored()) extract_flags.push_back({"--with", o.candidate});
  if (!base_b->is_stored()) extract_flags.push_back({"--with", base_spec});
  extract_flags.push_back({"-o", "small.h5"});
  const std::string extract = command_line({"fixture", "extract", fx_arg}, extract_flags);
  const std::string base_name = base_b->is_stored() ? base_spec : "stored:" + base_b->name();
  j["repro"] = {{"command", line},
                {"extract", extract},
                {"on_slice", command_line({"triage", "small.h5"}, {{"--candidate", cand_name},
                                                                  {"--baseline", base_name}, {"--exact", "stored:exact"}})},
                {"slice", sl}};
  return j;
}

}  // namespace ts
