#include "drivers/batch_plan.hpp"

#include <glob.h>
#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <sstream>

#include "core/decimal_text.hpp"
#include "core/block_config.hpp"
#include "core/error.hpp"
#include "drivers/run_estimate.hpp"
#include "fixtures/fixture.hpp"
#include "gates/gate_file.hpp"
#include "gates/json_input.hpp"
#include "kernels_under_test/registry.hpp"

namespace ts {
namespace {

namespace fs = std::filesystem;
using json_input::ObjectReader;

// Costs are core-seconds (one thread), so that every rank and worker, whatever
// its thread count, computes the same figures and so the same shards.
// A device mirror runs dense attention about this much faster than one host
// core at the estimator's rate (block24: exact_cuda 1.2 s against ~330 core-min
// estimated; README "At the seed's size"); a rough figure for balancing only.
constexpr double kDeviceCoreFactor = 10000;
// Reading q, k, v of a fixture: ~0.34 GB/s measured at block24 (3.2 GB in 9.5 s).
constexpr double kLoadBytesPerS = 3.4e8;

double dense_core_s(const BlockConfig& c) { return attention_flops(c) / 8e9; }

// One run of `spec` on a fixture of geometry `c`, in core-seconds.
double run_core_s(const std::string& spec, const BlockConfig& c) {
  const BackendSpec s = BackendSpec::parse(spec);
  if (s.is_stored()) return 0;
  if (s.is_device()) return dense_core_s(c) / kDeviceCoreFactor;
  return dense_core_s(c);  // exact, sage2, sol (at most dense), a plugin (unknown: as dense)
}

// A plugin's library as stat() says it is (size, modification time in ns): a kernel rebuilt
// under the same path is another candidate, so --resume judges it again.
std::string library_state(const std::string& spec) {
  const BackendSpec s = BackendSpec::parse(spec);
  if (!s.is_plugin()) return "";
  struct stat st {};
  if (::stat(s.argument().c_str(), &st) != 0) return "|library absent";
  return "|library " + std::to_string(st.st_size) + " " + std::to_string(st.st_mtim.tv_sec) + "." +
         std::to_string(st.st_mtim.tv_nsec);
}

std::string fnv_hex(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char ch : s) {
    h ^= ch;
    h *= 1099511628211ull;
  }
  char b[17];
  std::snprintf(b, sizeof b, "%016llx", static_cast<unsigned long long>(h));
  return b;
}

// /config read alone (no tensors): what the estimate needs.
BlockConfig config_of(const std::string& fixture, const std::string& where) {
  if (!fs::is_regular_file(fixture)) throw InputError(where + ": no such file " + fixture);
  nlohmann::json a;
  try {
    a = read_attrs(fixture, "/config");
  } catch (const InputError& e) {
    throw InputError(where + ": " + e.what());
  }
  BlockConfig c;
  try {
    c.heads = a.at("heads").get<int64_t>();
    c.head_dim = a.at("head_dim").get<int64_t>();
    c.segments = segments_from_json(a.at("segments").get<std::string>(), fixture + ": /config segments");
  } catch (const InputError&) {
    throw;
  } catch (const std::exception& e) {
    throw InputError(where + ": " + fixture + ": /config lacks heads, head_dim or segments (" + e.what() + ")");
  }
  return c;
}

std::vector<std::string> string_list(ObjectReader& r, const std::string& key, bool required, const std::string& where) {
  std::vector<std::string> out;
  const nlohmann::json* a = required ? &r.req_array(key) : r.optional(key);
  if (!a) return out;
  if (!a->is_array()) r.fail(key, "expected an array of strings, got " + json_input::type_name(*a));
  for (size_t i = 0; i < a->size(); ++i) {
    const auto& v = (*a)[i];
    const std::string p = json_input::index(r.path_of(key), i);
    if (!v.is_string() || v.get<std::string>().empty())
      throw InputError(where + ": " + p + ": expected a non-empty string, got " + json_input::type_name(v));
    out.push_back(v.get<std::string>());
  }
  if (required && out.empty()) r.fail(key, "must not be empty");
  return out;
}

// A path of the plan relative to the plan's folder, as the user would type it
// from the folder batch runs in.
std::string plan_relative(const fs::path& plan_dir, const std::string& p) {
  if (fs::path(p).is_absolute() || plan_dir.empty() || plan_dir == ".") return p;
  return (plan_dir / p).lexically_normal().string();
}

std::vector<std::string> expand_glob(const std::string& pattern) {
  glob_t g{};
  std::vector<std::string> out;
  if (::glob(pattern.c_str(), GLOB_ERR, nullptr, &g) == 0)
    for (size_t i = 0; i < g.gl_pathc; ++i) out.emplace_back(g.gl_pathv[i]);
  ::globfree(&g);
  std::sort(out.begin(), out.end());
  return out;
}

// "%g" kept six digits: a plan's tau 1.2345678 ran as 1.23457.
std::string tau_text(double t) { return shortest_decimal(t); }

struct Sweep {
  std::string backend = "sol", precision;
  std::vector<double> taus;
  std::vector<std::string> params;
};

std::vector<Sweep> read_sweeps(ObjectReader& r, const std::string& where) {
  std::vector<Sweep> out;
  const nlohmann::json* a = r.optional("sweeps");
  if (!a) return out;
  if (!a->is_array()) r.fail("sweeps", "expected an array of objects, got " + json_input::type_name(*a));
  for (size_t i = 0; i < a->size(); ++i) {
    ObjectReader s((*a)[i], where, json_input::index(r.path_of("sweeps"), i));
    Sweep w;
    if (auto b = s.opt_string("backend")) w.backend = *b;
    if (auto p = s.opt_string("precision")) w.precision = *p;
    const auto& taus = s.req_array("taus");
    for (size_t k = 0; k < taus.size(); ++k) {
      if (!taus[k].is_number() || !std::isfinite(taus[k].get<double>()))
        throw InputError(where + ": " + json_input::index(s.path_of("taus"), k) + ": expected a finite number, got " +
                         json_input::type_name(taus[k]));
      w.taus.push_back(taus[k].get<double>());
    }
    if (w.taus.empty()) s.fail("taus", "must not be empty");
    w.params = string_list(s, "params", false, where);
    s.finish();
    out.push_back(std::move(w));
  }
  return out;
}

std::string sweep_spec(const Sweep& w, double tau) {
  std::string s = w.backend + ":tau=" + tau_text(tau);
  if (!w.precision.empty()) s += ",precision=" + w.precision;
  for (const auto& p : w.params) s += "," + p;
  return s;
}

void read_options(ObjectReader& plan, GateRunOptions& o, const std::string& where) {
  const nlohmann::json* j = plan.optional("options");
  if (!j) return;
  ObjectReader r(*j, where, plan.path_of("options"));
  auto integer = [&](const char* key, int& dst, int lo) {
    if (auto v = r.opt_number(key)) {
      if (*v != std::floor(*v) || *v < lo || *v > 1e6)
        r.fail(key, "expected an integer from " + std::to_string(lo) + " to 1000000, got " + format_number(*v));
      dst = static_cast<int>(*v);
    }
  };
  // 0 as gate --pairs 0 takes it: nothing timed here (a speed rule on a computed side is
  // missing; two stored sides are judged on their /timings).
  integer("pairs", o.pairs, 0);
  o.timed = o.pairs > 0;
  o.pairs = std::max(o.pairs, 1);
  integer("warmup", o.warmup, 0);
  integer("rotate", o.rotate, 1);
  if (auto v = r.opt_number("budget_s")) {
    if (!(*v >= 0)) r.fail("budget_s", "must not be negative");
    o.budget_s = *v;
  }
  if (auto v = r.opt_number("seed")) {
    if (*v != std::floor(*v) || *v < 0 || *v > 9e15) r.fail("seed", "expected a non-negative integer");
    o.seed = static_cast<uint64_t>(*v);
  }
  if (auto v = r.opt_string("exact")) o.exact = *v;
  if (auto v = r.opt_bool("allow_slow")) o.allow_slow = *v;
  if (auto v = r.opt_bool("allow_nonfinite")) o.allow_nonfinite = *v;
  if (auto v = r.opt_bool("accuracy_only")) o.accuracy_only = *v;
  r.finish();
}

nlohmann::json options_json(const GateRunOptions& o) {
  return {{"pairs", o.timed ? o.pairs : 0},   {"warmup", o.warmup}, {"rotate", o.rotate},
          {"budget_s", o.budget_s}, {"seed", o.seed}, {"exact", o.exact},
          {"allow_slow", o.allow_slow}, {"allow_nonfinite", o.allow_nonfinite}, {"accuracy_only", o.accuracy_only}};
}

GateRunOptions options_from_json(const nlohmann::json& j) {
  GateRunOptions o;
  o.pairs = j.at("pairs").get<int>();
  o.timed = o.pairs > 0;
  o.pairs = std::max(o.pairs, 1);
  o.warmup = j.at("warmup").get<int>();
  o.rotate = j.at("rotate").get<int>();
  o.budget_s = j.at("budget_s").get<double>();
  o.seed = j.at("seed").get<uint64_t>();
  o.exact = j.at("exact").get<std::string>();
  o.allow_slow = j.at("allow_slow").get<bool>();
  o.allow_nonfinite = j.at("allow_nonfinite").get<bool>();
  o.accuracy_only = j.value("accuracy_only", false);
  return o;
}

// The identity of the work (not the estimates, which depend on nothing the
// verdicts do).
std::string digest_of(const std::vector<BatchCase>& cases, const GateRunOptions& o) {
  nlohmann::json j = nlohmann::json::array();
  for (const auto& c : cases) j.push_back({c.id, c.fixture, c.gate, c.baseline, c.candidate});
  nlohmann::json opts = options_json(o);
  opts.erase("allow_slow");
  return fnv_hex(nlohmann::json{{"cases", j}, {"options", opts}}.dump());
}

}  // namespace

nlohmann::json BatchCase::to_json() const {
  return {{"id", id},           {"fixture", fixture}, {"gate", gate}, {"baseline", baseline},
          {"candidate", candidate}, {"cost_core_s", cost_s}, {"key", key}};
}

BatchCase BatchCase::from_json(const nlohmann::json& j, const std::string& where) {
  try {
    BatchCase c;
    c.id = j.at("id").get<std::string>();
    c.fixture = j.at("fixture").get<std::string>();
    c.gate = j.at("gate").get<std::string>();
    c.baseline = j.at("baseline").get<std::string>();
    c.candidate = j.at("candidate").get<std::string>();
    c.cost_s = j.at("cost_core_s").get<double>();
    c.key = j.at("key").get<std::string>();
    return c;
  } catch (const std::exception& e) {
    throw InputError(where + ": a case is malformed (" + e.what() + ")");
  }
}

nlohmann::json BatchPlan::to_json() const {
  nlohmann::json cs = nlohmann::json::array();
  for (size_t i = 0; i < cases.size(); ++i) {
    nlohmann::json c = cases[i].to_json();
    c["group_cost_core_s"] = group_cost_s[i];
    cs.push_back(c);
  }
  return {{"schema", kPlanSchema}, {"path", path}, {"name", name}, {"digest", digest},
          {"options", options_json(options)}, {"cases", cs}};
}

BatchPlan BatchPlan::from_json(const nlohmann::json& j, const std::string& where) {
  BatchPlan p;
  try {
    p.path = j.at("path").get<std::string>();
    p.name = j.at("name").get<std::string>();
    p.digest = j.at("digest").get<std::string>();
    p.options = options_from_json(j.at("options"));
    for (const auto& c : j.at("cases")) {
      p.cases.push_back(BatchCase::from_json(c, where));
      p.group_cost_s.push_back(c.at("group_cost_core_s").get<double>());
    }
  } catch (const InputError&) {
    throw;
  } catch (const std::exception& e) {
    throw InputError(where + ": the plan it carries is malformed (" + e.what() + ")");
  }
  return p;
}

BatchPlan load_plan(const std::string& path) {
  const nlohmann::json j = json_input::read_file(path);
  ObjectReader r(j, path, "$");
  const std::string schema = r.req_string("schema");
  if (schema != kPlanSchema) r.fail("schema", "expected \"" + std::string(kPlanSchema) + "\", got \"" + schema + "\"");
  BatchPlan plan;
  plan.path = path;
  plan.name = r.opt_string("name").value_or(fs::path(path).stem().string());
  const fs::path dir = fs::path(path).parent_path();

  const auto patterns = string_list(r, "fixtures", true, path);
  const auto gate_names = string_list(r, "gates", true, path);
  const auto baselines = string_list(r, "baselines", false, path);
  const auto candidates = string_list(r, "candidates", false, path);
  const auto sweeps = read_sweeps(r, path);
  std::string stored_mode = "none";
  std::vector<std::string> stored_names;
  if (const nlohmann::json* s = r.optional("stored")) {
    if (s->is_string()) {
      stored_mode = s->get<std::string>();
      if (stored_mode != "auto" && stored_mode != "none")
        r.fail("stored", "expected \"auto\", \"none\" or an array of output names, got \"" + stored_mode + "\"");
    } else {
      stored_mode = "list";
      stored_names = string_list(r, "stored", false, path);
    }
  }
  read_options(r, plan.options, path);
  r.finish();

  std::vector<std::string> fixtures;
  std::vector<size_t> pattern_of;  // which entry of "fixtures" named each, for errors
  std::set<std::string> seen;
  for (size_t i = 0; i < patterns.size(); ++i) {
    const std::string p = plan_relative(dir, patterns[i]);
    const std::string where = path + ": " + json_input::index("$.fixtures", i);
    std::vector<std::string> hits;
    if (p.find_first_of("*?[") == std::string::npos) {
      if (!fs::is_regular_file(p)) throw InputError(where + ": no such file " + p);
      hits.push_back(p);
    } else {
      hits = expand_glob(p);
      if (hits.empty()) throw InputError(where + ": '" + p + "' matches no file");
    }
    for (auto& h : hits)
      if (seen.insert(h).second) {
        fixtures.push_back(h);
        pattern_of.push_back(i);
      }
  }

  std::vector<GateFile> gates;
  std::vector<std::string> gate_sources;  // what a case names: a path as batch sees it, or a built-in name
  std::vector<std::string> gate_digests;  // of the gate's text: an edited gate file judges anew on --resume
  for (size_t i = 0; i < gate_names.size(); ++i) {
    const std::string rel = plan_relative(dir, gate_names[i]);
    try {
      gates.push_back(load_gate(rel));
      gate_sources.push_back(fs::exists(rel) ? rel : gate_names[i]);
    } catch (const InputError& e) {
      // A built-in name is not a path: load it as given.
      try {
        gates.push_back(load_gate(gate_names[i]));
        gate_sources.push_back(gate_names[i]);
      } catch (const InputError&) {
        throw InputError(path + ": " + json_input::index("$.gates", i) + ": " + e.what());
      }
    }
    if (fs::is_regular_file(gate_sources.back())) {
      std::ifstream in(gate_sources.back(), std::ios::binary);
      gate_digests.push_back(fnv_hex(std::string(std::istreambuf_iterator<char>(in), {})));
    } else {
      gate_digests.push_back(fnv_hex(gates.back().to_json().dump()));
    }
    for (const auto& rule : gates.back().rules)
      if (gates.back().tensor_of(rule) != "attention")
        throw InputError(path + ": " + json_input::index("$.gates", i) + ": rule '" + rule.id + "' judges tensor '" +
                         gates.back().tensor_of(rule) + "'; batch runs attention backends");
  }

  auto check_spec = [&](const std::string& spec, const std::string& fixture, const std::string& where) {
    try {
      require_device_for(spec);
      const BackendSpec s = BackendSpec::parse(spec);
      if (s.is_plugin()) {
        // Probed where its case runs (a child process per plugin): here only its file.
        if (!fs::is_regular_file(s.argument())) throw InputError("plugin '" + s.argument() + "': no such file");
        return;
      }
      s.make(BackendContext{fixture});
    } catch (const InputError& e) {
      throw InputError(path + ": " + where + ": " + e.what());
    }
  };

  std::vector<std::string> explicit_cands;
  std::map<std::string, std::string> origin;  // spec -> the JSON path that named it first, for errors
  for (size_t i = 0; i < candidates.size(); ++i) {
    explicit_cands.push_back(candidates[i]);
    origin.emplace(candidates[i], json_input::index("$.candidates", i));
  }
  for (size_t k = 0; k < sweeps.size(); ++k)
    for (double t : sweeps[k].taus) {
      explicit_cands.push_back(sweep_spec(sweeps[k], t));
      origin.emplace(explicit_cands.back(), json_input::index("$.sweeps", k));
    }
  if (explicit_cands.empty() && stored_mode == "none")
    r.fail("candidates", "the plan names no candidate (candidates, sweeps or stored)");

  const std::string opt_digest = fnv_hex(options_json(plan.options).dump());
  const int timed_speed = plan.options.timed ? plan.options.warmup + plan.options.pairs : 0;
  std::vector<std::pair<std::string, int>> slow_runs;
  for (size_t fi = 0; fi < fixtures.size(); ++fi) {
    const std::string& fx = fixtures[fi];
    const BlockConfig cfg = config_of(fx, path + ": " + json_input::index("$.fixtures", pattern_of[fi]));
    const double load_s = 3.0 * static_cast<double>(cfg.tokens() * cfg.heads * cfg.head_dim) * 2 / kLoadBytesPerS;
    const ExactChoice ex = choose_exact(plan.options.exact, fx, cfg);
    const std::string fx_state = fixture_files_state(fx);
    for (size_t gi = 0; gi < gates.size(); ++gi) {
      const GateFile& g = gates[gi];
      const bool speed = has_speed_rule(g);
      std::vector<std::string> bases = baselines.empty() ? std::vector<std::string>{g.baseline} : baselines;
      for (size_t bi = 0; bi < bases.size(); ++bi) {
        const std::string& base = bases[bi];
        check_spec(base, fx, baselines.empty() ? json_input::index("$.gates", gi) + " baseline"
                                               : json_input::index("$.baselines", bi));
        std::vector<std::string> cands = explicit_cands;
        std::vector<std::string> names;
        if (stored_mode == "auto") {
          for (const auto& n : list_group(fx, "/outputs"))
            if (has_dataset(fx, "/outputs/" + n + "/attention") && has_dataset(fx, "/timings/" + n)) names.push_back(n);
        } else if (stored_mode == "list") {
          names = stored_names;
        }
        for (const auto& n : names) {
          const std::string s = "stored:" + n;
          // Never the baseline's or the exact reference's own output as a row (as sweep).
          if (s != base && s != ex.spec && std::find(cands.begin(), cands.end(), s) == cands.end()) cands.push_back(s);
        }
        if (cands.empty())
          throw InputError(path + ": $.stored: " + fx + " has no stored output to judge and the plan names no other candidate");
        const double shared = load_s + run_core_s(ex.spec, cfg) + run_core_s(base, cfg);
        slow_runs.push_back({ex.spec, 1});
        for (size_t ci = 0; ci < cands.size(); ++ci) {
          const std::string& c = cands[ci];
          const auto from = origin.find(c);
          check_spec(c, fx, from != origin.end() ? from->second : "$.stored (" + c + ")");
          const bool stored_side = is_stored_spec(c) || is_stored_spec(base);
          const int timed = speed && !stored_side ? timed_speed : 0;
          BatchCase bc;
          char id[32];
          std::snprintf(id, sizeof id, "c%04zu", plan.cases.size());
          bc.id = id;
          bc.fixture = fx;
          bc.gate = gate_sources[gi];
          bc.baseline = base;
          bc.candidate = c;
          bc.cost_s = (1 + timed) * run_core_s(c, cfg) + timed * run_core_s(base, cfg);
          bc.key = fx + "|" + bc.gate + "|" + base + "|" + c + "|" + opt_digest + "|" + fx_state + "|" + gate_digests[gi] +
                   library_state(base) + library_state(c);
          plan.cases.push_back(bc);
          plan.group_cost_s.push_back(shared);
          slow_runs.push_back({c, 1 + timed});
          slow_runs.push_back({base, timed + (ci == 0)});
        }
      }
    }
    // The slow-run guard over the whole fixture's work, as gate applies it to one call.
    try {
      refuse_slow_cpu(slow_runs, cfg, SlowGuard::from_env(plan.options.allow_slow), "batch " + fx);
    } catch (const InputError& e) {
      throw InputError(path + ": " + e.what() + " (\"options\": {\"allow_slow\": true} starts it anyway)");
    }
    slow_runs.clear();
  }
  plan.digest = digest_of(plan.cases, plan.options);
  return plan;
}

std::vector<WorkUnit> work_units(const BatchPlan& plan, int workers) {
  std::vector<WorkUnit> units;
  std::map<std::string, size_t> group_of;
  for (size_t i = 0; i < plan.cases.size(); ++i) {
    const BatchCase& c = plan.cases[i];
    const std::string g = c.fixture + "|" + c.gate + "|" + c.baseline;
    auto it = group_of.find(g);
    if (it == group_of.end()) {
      it = group_of.emplace(g, units.size()).first;
      units.push_back({{}, plan.group_cost_s[i]});
    }
    units[it->second].cases.push_back(i);
    units[it->second].cost_s += c.cost_s;
  }
  while (static_cast<int>(units.size()) < workers) {
    size_t best = units.size();
    for (size_t u = 0; u < units.size(); ++u)
      if (units[u].cases.size() > 1 && (best == units.size() || units[u].cost_s > units[best].cost_s)) best = u;
    if (best == units.size()) break;
    WorkUnit& a = units[best];
    const double shared = plan.group_cost_s[a.cases.front()];
    WorkUnit b;
    const size_t half = a.cases.size() / 2;
    b.cases.assign(a.cases.begin() + static_cast<long>(half), a.cases.end());
    a.cases.resize(half);
    a.cost_s = b.cost_s = shared;
    for (size_t i : a.cases) a.cost_s += plan.cases[i].cost_s;
    for (size_t i : b.cases) b.cost_s += plan.cases[i].cost_s;
    units.insert(units.begin() + static_cast<long>(best) + 1, std::move(b));
  }
  return units;
}

std::vector<int> assign_shards(const std::vector<WorkUnit>& units, int n) {
  if (n < 1) throw InputError("the number of shards must be at least 1, got " + std::to_string(n));
  std::vector<size_t> order(units.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return units[a].cost_s > units[b].cost_s; });
  std::vector<double> load(static_cast<size_t>(n), 0);
  std::vector<int> shard(units.size(), 0);
  for (size_t u : order) {
    const size_t best = static_cast<size_t>(std::min_element(load.begin(), load.end()) - load.begin());
    shard[u] = static_cast<int>(best);
    load[best] += units[u].cost_s;
  }
  return shard;
}

std::string format_duration(double s) {
  char b[64];
  if (s < 1) std::snprintf(b, sizeof b, "%.2g s", s);
  else if (s < 120) std::snprintf(b, sizeof b, "%.0f s", s);
  else if (s < 7200) std::snprintf(b, sizeof b, "%.0f min", s / 60);
  else std::snprintf(b, sizeof b, "%.1f h", s / 3600);
  return b;
}

nlohmann::json dry_run_json(const BatchPlan& plan, const std::vector<WorkUnit>& units,
                            const std::vector<int>& shard_of_unit, int shards) {
  nlohmann::json cases = nlohmann::json::array();
  std::vector<double> load(static_cast<size_t>(shards), 0);
  std::vector<std::pair<int, int>> where(plan.cases.size());
  for (size_t u = 0; u < units.size(); ++u) {
    load[static_cast<size_t>(shard_of_unit[u])] += units[u].cost_s;
    for (size_t i : units[u].cases) where[i] = {static_cast<int>(u), shard_of_unit[u]};
  }
  double total = 0;
  for (const auto& u : units) total += u.cost_s;
  for (size_t i = 0; i < plan.cases.size(); ++i) {
    nlohmann::json c = plan.cases[i].to_json();
    c["unit"] = where[i].first;
    c["shard"] = where[i].second;
    cases.push_back(c);
  }
  return {{"schema", "touchstone.batch-dry-run/1"},
          {"plan", plan.path},
          {"digest", plan.digest},
          {"cases", cases},
          {"units", units.size()},
          {"shards", shards},
          {"estimate_core_s", {{"total", total}, {"per_shard", load}}},
          {"estimate_note", "core-seconds at the slow-run estimator's rate (drivers/run_estimate.hpp): a lower bound "
                            "for host runs, rough for device runs; divide by the threads a worker has"}};
}

std::string dry_run_text(const BatchPlan& plan, const std::vector<WorkUnit>& units,
                         const std::vector<int>& shard_of_unit, int shards) {
  const nlohmann::json j = dry_run_json(plan, units, shard_of_unit, shards);
  std::ostringstream o;
  o << "plan " << plan.path << " (" << plan.name << ", digest " << plan.digest << "): " << plan.cases.size()
    << " cases in " << units.size() << " units over " << shards << " shard(s)\n";
  o << "id     shard  est(core-s)  fixture | gate | baseline | candidate\n";
  for (const auto& c : j["cases"]) {
    char b[64];
    std::snprintf(b, sizeof b, "%-6s %5d  %11.3g  ", c["id"].get<std::string>().c_str(), c["shard"].get<int>(),
                  c["cost_core_s"].get<double>());
    o << b << c["fixture"].get<std::string>() << " | " << c["gate"].get<std::string>() << " | "
      << c["baseline"].get<std::string>() << " | " << c["candidate"].get<std::string>() << "\n";
  }
  o << "estimate: " << format_duration(j["estimate_core_s"]["total"].get<double>())
    << " of one core in all (shared fixture work included); per shard:";
  for (const auto& s : j["estimate_core_s"]["per_shard"]) o << " " << format_duration(s.get<double>());
  o << "\n";
  return o.str();
}

}  // namespace ts
