#include "drivers/chain.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "drivers/block_run.hpp"
#include "drivers/run_estimate.hpp"
#include "fixtures/fixture.hpp"
#include "fixtures/block/chain_step.hpp"
#include "reference/sage2_presets.hpp"

namespace ts {
namespace {

using Clock = std::chrono::steady_clock;

int64_t int_attr(const nlohmann::json& a, const char* key, const std::string& where) {
  if (!a.contains(key) || !a[key].is_number_integer())
    throw InputError(where + ": root attribute '" + key + "' is missing or not an integer");
  return a[key].get<int64_t>();
}

// |a - b| / |n| in float64, in element order (deterministic).
double rel_distance(const Tensor& a, const Tensor& b, const Tensor& n) {
  double d = 0, r = 0;
  for (size_t i = 0; i < a.data.size(); ++i) {
    const double e = a.data[i] - b.data[i];
    d += e * e;
    r += n.data[i] * n.data[i];
  }
  return r > 0 ? std::sqrt(d / r) : (d > 0 ? INFINITY : 0.0);
}

bool same_bits(const Tensor& a, const Tensor& b) {
  if (a.shape != b.shape) return false;
  for (size_t i = 0; i < a.data.size(); ++i)
    if (!(a.data[i] == b.data[i]) || std::signbit(a.data[i]) != std::signbit(b.data[i])) return false;
  return true;
}

struct Run {
  Tensor out;
  double attention_ms = 0;
  std::string clock;
  std::optional<double> density;
};

}  // namespace

double ChainResult::attention_ms() const {
  double t = 0;
  for (const auto& c : cells) t += c.attention_ms;
  return t;
}

double ChainResult::work() const {
  if (cells.empty()) return 0;
  double w = 0;
  for (const auto& c : cells) w += c.density.value_or(1.0);
  return w / static_cast<double>(cells.size());
}

double ChainRun::baseline_attention_ms() const {
  double t = 0;
  for (const auto& c : baseline) t += c.attention_ms;
  return t;
}

ChainSet open_chain_set(const std::vector<std::string>& args) {
  namespace fs = std::filesystem;
  if (args.empty()) throw InputError("chain: give the chain set's files, or its folder");
  ChainSet set;
  std::vector<std::string> files;
  if (args.size() == 1 && fs::is_directory(args[0])) {
    set.label = args[0];
    for (const auto& e : fs::directory_iterator(args[0]))
      if (e.path().extension() == ".h5" && e.is_regular_file()) files.push_back(e.path().string());
    std::sort(files.begin(), files.end());
    if (files.empty()) throw InputError(args[0] + ": no .h5 files in this folder");
  } else {
    files = args;
    set.label = args[0];
  }
  struct Where {
    int64_t block, step;
    std::string file;
  };
  std::vector<Where> found;
  std::optional<std::string> chain_text;
  std::string geometry;
  for (const auto& f : files) {
    if (!fs::is_regular_file(f)) throw InputError(f + ": no such file");
    const nlohmann::json root = read_attrs(f, "/");
    found.push_back({int_attr(root, "block_index", f), int_attr(root, "step", f), f});
    const std::string ct = root.contains(kChainAttr) && root[kChainAttr].is_string() ? root[kChainAttr].get<std::string>() : "";
    nlohmann::json c = ct.empty() ? nlohmann::json() : nlohmann::json::parse(ct, nullptr, false);
    if (!ct.empty() && (c.is_discarded() || !c.is_object() || !c.contains("dt") || !c["dt"].is_number()))
      throw InputError(f + ": root attribute 'chain' is not the chain set's JSON (docs/fixture-format.md)");
    if (!c.is_null()) {
      c.erase("block");
      c.erase("step");
      if (c.value("step_rule", "") != kChainStepRule)
        throw InputError(f + ": chain step_rule '" + c.value("step_rule", "") + "' is not one this build knows (" +
                         kChainStepRule + ")");
    }
    const std::string cs = c.is_null() ? "" : c.dump();
    if (!chain_text) chain_text = cs;
    if (*chain_text != cs)
      throw InputError(f + ": its 'chain' attribute differs from " + files[0] + "'s (files of two sets?)");
    const std::string g = read_attrs(f, "/config").dump();
    if (geometry.empty()) geometry = g;
    if (g != geometry) throw InputError(f + ": its /config differs from " + files[0] + "'s (one geometry per set)");
    // An attention-only set (AttentionSetCapture) has the set's layout but none of a block's inputs:
    // say which capture writes what a chain needs, not just which dataset is absent.
    const std::vector<std::string> top = list_group(f, "/");
    if (std::find(top.begin(), top.end(), "block") == top.end())
      throw InputError(f + ": no /block (an attention-only fixture: q, k, v and outputs); a chain runs whole "
                           "blocks: capture the set with touchstone.BlockSetCapture, or synthesize one with "
                           "`touchstone fixture synth --blocks N --steps M`");
    if (!has_dataset(f, "/block/x"))
      throw InputError(f + ": /block/x is missing (a chain runs whole blocks; synthesize a set with "
                           "`touchstone fixture synth --blocks N --steps M`)");
  }
  int64_t nb = 0, ns = 0;
  for (const auto& w : found) {
    if (w.block < 0 || w.step < 0) throw InputError(w.file + ": block_index and step must not be negative");
    nb = std::max(nb, w.block + 1);
    ns = std::max(ns, w.step + 1);
  }
  set.blocks = static_cast<int>(nb);
  set.steps = static_cast<int>(ns);
  set.files.assign(static_cast<size_t>(nb * ns), "");
  for (const auto& w : found) {
    std::string& slot = set.files[static_cast<size_t>(w.step * nb + w.block)];
    if (!slot.empty())
      throw InputError(w.file + ": block " + std::to_string(w.block) + " of step " + std::to_string(w.step) +
                       " is also " + slot);
    slot = w.file;
  }
  for (int s = 0; s < set.steps; ++s)
    for (int b = 0; b < set.blocks; ++b)
      if (set.at(b, s).empty())
        throw InputError(set.label + ": block " + std::to_string(b) + " of step " + std::to_string(s) +
                         " is missing (a chain needs every block of every step)");
  if (chain_text && !chain_text->empty()) {
    const nlohmann::json c = nlohmann::json::parse(*chain_text);
    set.dt = c["dt"].get<double>();
    if (c.value("blocks", set.blocks) != set.blocks || c.value("steps", set.steps) != set.steps)
      throw InputError(set.label + ": the set says " + std::to_string(c.value("blocks", 0)) + " blocks x " +
                       std::to_string(c.value("steps", 0)) + " steps, the files give " + std::to_string(set.blocks) +
                       " x " + std::to_string(set.steps));
  }
  return set;
}

ChainRun run_chains(const ChainSet& set, const std::vector<Schedule>& schedules, const ChainOptions& in_opts) {
  ChainOptions opts = in_opts;
  if (opts.baseline.empty()) opts.baseline = sage2_default_spec();
  const BackendMaker make = opts.make ? opts.make : BackendMaker(make_attention_backend);
  if (schedules.empty()) throw InputError("chain: no schedule to run (give --candidate)");
  const BlockBackendKind& kind = block_backend(opts.block_backend);
  BlockOptions prod;
  prod.linear = linear_mode_from_name(opts.linear);
  prod.recipe = opts.recipe;
  prod.keep = {stage_name(BlockStage::output)};
  BlockOptions exact_opts;
  exact_opts.linear = LinearMode::fp64;
  exact_opts.keep = {stage_name(BlockStage::output)};
  // Every spec is made once before any block runs: a typo is bad input.
  std::vector<std::string> specs = {opts.baseline, opts.exact};
  for (const auto& s : schedules) {
    s.check_covers(set.blocks, set.steps);
    for (const auto& sp : s.specs()) specs.push_back(sp);
  }
  for (const auto& sp : specs) {
    if (is_stored_spec(sp))
      throw InputError("chain: '" + sp + "' is a stored output, computed on the fixture's own inputs; a chain "
                       "feeds each block what the blocks before computed (give a computed backend or a plugin)");
    require_device_for(sp);
    make(sp, BackendContext{set.at(0, 0)});
  }

  ChainRun run;
  run.set = set;
  run.opts = opts;
  run.chains.resize(schedules.size());
  for (size_t i = 0; i < schedules.size(); ++i) {
    run.chains[i].schedule = schedules[i];
    run.chains[i].emulated = true;
    for (const auto& sp : schedules[i].specs()) run.chains[i].emulated &= is_emulation_spec(sp);
  }
  const auto t_start = Clock::now();
  auto block_run = [&](const BlockInputs& inputs, const Tensor& x, const std::string& spec, const BlockOptions& bo,
                       const std::string& file) {
    BlockInputs in = inputs;
    in.x = x;
    auto att = make(spec, BackendContext{file});
    BlockResult r = kind.run(in, *att, bo);
    ++run.block_runs;
    Run out;
    out.out = std::move(r.stages.at(stage_name(BlockStage::output)));
    const nlohmann::json& st = r.attention_stats;
    if (st.contains("device_ms") && st["device_ms"].is_number()) {
      out.attention_ms = st["device_ms"].get<double>();
      out.clock = "device_events";
    } else {
      out.attention_ms = r.stage_ms.count(stage_name(BlockStage::attention)) ? r.stage_ms.at(stage_name(BlockStage::attention)) : 0.0;
      out.clock = "host_steady";
    }
    if (st.contains("density") && st["density"].is_number()) out.density = st["density"].get<double>();
    return out;
  };

  // Each stack's residual stream; a candidate's key names the runs it has been
  // through ("B": none but the baseline's), so chains that agree share runs.
  std::optional<Tensor> x_exact, x_base, x0_exact, x0_base;
  std::vector<std::optional<Tensor>> x_cand(schedules.size()), x0_cand(schedules.size());
  std::vector<std::string> key(schedules.size(), "B");
  std::vector<bool> failed(schedules.size(), false);
  for (int s = 0; s < set.steps; ++s) {
    for (int b = 0; b < set.blocks; ++b) {
      const std::string& file = set.at(b, s);
      BlockInputs in = load_block_inputs(file);
      if (b == 0) {
        if (s == 0 || !set.dt) {  // the stored x (a capture: every step's own)
          x0_exact = in.x;
          x0_base = in.x;
          for (size_t i = 0; i < schedules.size(); ++i) key[i] = "B";
        } else {  // the step rule, each stack from its own last step
          x0_exact = next_step_input(*x0_exact, *x_exact, *set.dt, file);
          x0_base = next_step_input(*x0_base, *x_base, *set.dt, file);
          for (size_t i = 0; i < schedules.size(); ++i)
            if (key[i] != "B") x0_cand[i] = next_step_input(*x0_cand[i], *x_cand[i], *set.dt, file);
        }
        x_exact = x0_exact;
        x_base = x0_base;
        for (size_t i = 0; i < schedules.size(); ++i) {
          if (key[i] == "B") x0_cand[i] = x0_base;
          x_cand[i] = x0_cand[i];
        }
      }
      BaselineCell bc;
      bc.matches_fixture = same_bits(*x_base, in.x);
      const Run ex = block_run(in, *x_exact, opts.exact, exact_opts, file);
      const Run base = block_run(in, *x_base, opts.baseline, prod, file);
      bc.vs_exact = compute_metrics(base.out, ex.out);
      bc.attention_ms = base.attention_ms;
      bc.clock = base.clock;
      run.baseline.push_back(bc);
      std::map<std::string, Run> shared;  // by new key
      std::map<std::string, Run> own_run;  // the candidate on the baseline's input, by spec
      for (size_t i = 0; i < schedules.size(); ++i) {
        ChainResult& ch = run.chains[i];
        if (failed[i]) continue;
        ChainCell cell;
        cell.block = b;
        cell.step = s;
        cell.spec = ch.schedule.at(b, s);
        cell.dense = cell.spec == opts.baseline;
        try {
          const bool on_baseline = key[i] == "B";
          cell.in_error = on_baseline ? 0.0 : rel_distance(*x_cand[i], *x_base, *x_base);
          const std::string next = on_baseline && cell.dense ? "B" : key[i] + "|" + cell.spec;
          const Run* out = &base;
          if (next != "B") {
            auto it = shared.find(next);
            if (it == shared.end()) it = shared.emplace(next, block_run(in, on_baseline ? *x_base : *x_cand[i], cell.spec, prod, file)).first;
            out = &it->second;
          }
          const Run* own = &base;
          if (!cell.dense) {
            auto it = own_run.find(cell.spec);
            if (it == own_run.end()) {
              if (on_baseline) {
                it = own_run.emplace(cell.spec, shared.at(next)).first;
              } else {
                it = own_run.emplace(cell.spec, block_run(in, *x_base, cell.spec, prod, file)).first;
              }
            }
            own = &it->second;
          }
          cell.vs_baseline = compute_metrics(out->out, base.out);
          cell.vs_exact = compute_metrics(out->out, ex.out);
          cell.own = rel_distance(own->out, base.out, base.out);
          cell.carried = rel_distance(out->out, own->out, base.out);
          if (cell.in_error > 0) cell.growth = cell.carried / cell.in_error;
          cell.attention_ms = out->attention_ms;
          cell.clock = out->clock;
          cell.density = out->density;
          key[i] = next;
          if (next != "B") x_cand[i] = out->out;
        } catch (const InputError&) {
          throw;
        } catch (const std::exception& e) {
          ch.error = "block " + std::to_string(b) + " of step " + std::to_string(s) + " (" + cell.spec + "): " + e.what();
          failed[i] = true;
          continue;
        }
        ch.cells.push_back(std::move(cell));
      }
      x_exact = ex.out;
      x_base = base.out;
      if (opts.progress) opts.progress();
    }
  }
  run.wall_s = std::chrono::duration<double>(Clock::now() - t_start).count();
  return run;
}

}  // namespace ts
