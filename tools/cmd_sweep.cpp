// touchstone sweep F --backend sol --tau LIST: one row per tau with the routed
// density, the distance to the baseline (default sage2 at its default preset) and to exact
// attention, and the wall time: the speed/fidelity curve of a routed backend. Each row
// may reuse what the row before prepared (AttentionBackend::continue_from): the first
// row's time then carries that preparation (sol_cuda: quantisers and uploads).
#include <omp.h>

#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>

#include "core/error.hpp"
#include "core/progress.hpp"
#include "fixtures/attention_inputs.hpp"
#include "fixtures/fixture.hpp"
#include "gates/metrics.hpp"
#include "drivers/run_estimate.hpp"
#include "kernels_under_test/registry.hpp"
#include "reference/sage2_presets.hpp"
#include "tools/command.hpp"

namespace {

using Clock = std::chrono::steady_clock;

struct Opts {
  std::string fixture, backend = "sol", precision, baseline = ts::sage2_default_spec(), exact = "auto";
  std::vector<double> taus = {-100, 0, 0.5, 1, 1.3, 2, 3};
  std::vector<std::string> params;
  ts::cli::ReportTarget json;
  bool allow_nonfinite = false, allow_slow = false;
};

std::string fmt(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

std::string spec_for(const Opts& o, double tau) {
  std::string spec = o.backend + (o.backend.find(':') == std::string::npos ? ":" : ",");
  spec += "tau=" + fmt(tau);
  if (!o.precision.empty()) spec += ",precision=" + o.precision;
  for (const auto& kv : o.params) {
    if (kv.find('=') == std::string::npos || kv.find(',') != std::string::npos)
      throw ts::InputError("--param '" + kv + "' is not one key=value");
    if (kv.rfind("tau=", 0) == 0) throw ts::InputError("--param tau=...: give taus with --tau");
    spec += "," + kv;
  }
  return spec;
}

struct Timed {
  ts::AttentionResult result;
  std::string name;
  double ms;
};

// earlier: the backend of the previous row, whose preparation this one may reuse.
Timed run_backend(const std::string& spec, const std::string& fixture, const ts::AttentionProblem& problem,
                  std::unique_ptr<ts::AttentionBackend>* earlier = nullptr) {
  auto b = ts::make_attention_backend(spec, {fixture});
  if (earlier && *earlier) b->continue_from(**earlier);
  const auto t0 = Clock::now();
  ts::AttentionResult r = b->run(problem);
  const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  std::string name = b->name();
  if (earlier) *earlier = std::move(b);
  return {std::move(r), std::move(name), ms};
}

nlohmann::json opt_json(const std::optional<double>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

std::string opt_str(const std::optional<double>& v, const char* f) {
  if (!v) return "undef";
  char buf[32];
  std::snprintf(buf, sizeof buf, f, *v);
  return buf;
}

int run(const Opts& o) {
  if (o.taus.empty()) throw ts::InputError("--tau: give at least one value");
  ts::LoadOptions lo;
  lo.allow_nonfinite = o.allow_nonfinite;
  const ts::Fixture fx = ts::load_fixture(o.fixture, lo);
  const ts::AttentionProblem problem = ts::attention_problem(fx);
  // Build every spec first, so a bad flag fails before minutes of work.
  std::vector<std::string> specs;
  for (double t : o.taus) {
    specs.push_back(spec_for(o, t));
    ts::make_attention_backend(specs.back(), {o.fixture});
  }
  const ts::ExactChoice exact_choice = ts::choose_exact(o.exact, o.fixture, fx.config);
  ts::make_attention_backend(exact_choice.spec, {o.fixture});
  ts::require_device_for(o.baseline);
  ts::make_attention_backend(o.baseline, {o.fixture});
  for (const auto& sp : specs) ts::require_device_for(sp);
  {
    std::vector<std::pair<std::string, int>> runs = {{exact_choice.spec, 1}, {o.baseline, 1}};
    for (const auto& sp : specs) runs.push_back({sp, 1});
    ts::refuse_slow_cpu(runs, fx.config, ts::SlowGuard::from_env(o.allow_slow), "sweep");
  }

  ts::Progress progress("sweep", static_cast<int64_t>(o.taus.size()) + 2);
  const Timed exact = run_backend(exact_choice.spec, o.fixture, problem);
  progress.advance();
  const Timed base = run_backend(o.baseline, o.fixture, problem);
  progress.advance();
  const ts::MetricSet base_vs_exact = ts::compute_metrics(base.result.out, exact.result.out);

  nlohmann::json rows = nlohmann::json::array();
  std::unique_ptr<ts::AttentionBackend> earlier;
  for (size_t i = 0; i < specs.size(); ++i) {
    const Timed t = run_backend(specs[i], o.fixture, problem, &earlier);
    progress.advance();
    const ts::MetricSet vb = ts::compute_metrics(t.result.out, base.result.out);
    const ts::MetricSet ve = ts::compute_metrics(t.result.out, exact.result.out);
    nlohmann::json row = {{"tau", o.taus[i]},
                          {"name", t.name},
                          {"spec", specs[i]},
                          {"density", t.result.stats.contains("density") ? t.result.stats["density"]
                                                                        : nlohmann::json(nullptr)},
                          {"rel_l2_vs_baseline", opt_json(vb.rel_l2)},
                          {"cosine_vs_baseline", opt_json(vb.cosine)},
                          {"rel_l2_vs_exact", opt_json(ve.rel_l2)},
                          {"cosine_vs_exact", opt_json(ve.cosine)},
                          {"nonfinite", vb.nonfinite},
                          {"ms", t.ms}};
    for (const char* k : {"device_ms", "prepare_ms"})
      if (t.result.stats.contains(k)) row[k] = t.result.stats[k];
    if (t.result.stats.contains("density_per_head"))
      row["density_per_head"] = t.result.stats["density_per_head"];
    rows.push_back(row);
  }

  if (o.json.on()) {
    nlohmann::json j = {{"fixture", o.fixture},
                        {"S", problem.q.S},
                        {"H", problem.q.H},
                        {"D", problem.q.D},
                        {"threads", omp_get_max_threads()},
                        {"exact", {{"name", exact.name}, {"ms", exact.ms}, {"spec", exact_choice.spec}, {"why", exact_choice.why}}},
                        {"baseline",
                         {{"spec", o.baseline},
                          {"name", base.name},
                          {"ms", base.ms},
                          {"rel_l2_vs_exact", opt_json(base_vs_exact.rel_l2)},
                          {"cosine_vs_exact", opt_json(base_vs_exact.cosine)}}},
                        {"rows", rows}};
    o.json.emit(j.dump(2) + "\n");
    if (o.json.to_stdout()) return ts::kPass;
  }
  std::printf("sweep %s on %s: S=%lld H=%lld D=%lld\n", o.backend.c_str(), o.fixture.c_str(),
              (long long)problem.q.S, (long long)problem.q.H, (long long)problem.q.D);
  std::printf("baseline %s: rel_l2 vs exact %s, cosine %s, %.1f ms (exact %.1f ms)\n",
              base.name.c_str(), opt_str(base_vs_exact.rel_l2, "%.4g").c_str(),
              opt_str(base_vs_exact.cosine, "%.6f").c_str(), base.ms, exact.ms);
  std::printf("%8s %8s %12s %12s %12s %12s %10s\n", "tau", "density", "rel_l2/base", "cos/base",
              "rel_l2/exact", "cos/exact", "ms");
  for (const auto& r : rows) {
    auto num = [&](const char* k, const char* f) {
      if (!r[k].is_number()) return std::string("undef");
      char buf[32];
      std::snprintf(buf, sizeof buf, f, r[k].get<double>());
      return std::string(buf);
    };
    std::printf("%8g %8s %12s %12s %12s %12s %10.1f\n", r["tau"].get<double>(),
                num("density", "%.3f").c_str(), num("rel_l2_vs_baseline", "%.4g").c_str(),
                num("cosine_vs_baseline", "%.6f").c_str(), num("rel_l2_vs_exact", "%.4g").c_str(),
                num("cosine_vs_exact", "%.6f").c_str(), r["ms"].get<double>());
  }
  return ts::kPass;
}

ts::cli::Registration reg{
    "sweep",
    "Run a routed backend over a list of tau: density, distance to the baseline and to exact, time",
    [](CLI::App& app) -> ts::cli::Action {
      auto o = std::make_shared<Opts>();
      app.add_option("fixture", o->fixture, "fixture file (HDF5)")->required();
      app.add_option("--backend", o->backend, "backend kind taking tau (sol)")->capture_default_str();
      app.add_option("--tau", o->taus, "comma-separated thresholds")
          ->delimiter(',')
          ->capture_default_str();
      app.add_option("--precision", o->precision, "bf16 | int8_qk | int8_qk_pv");
      app.add_option("--param", o->params, "extra backend knob key=value (repeatable)");
      app.add_option("--baseline", o->baseline, "backend spec the rows are compared with")
          ->capture_default_str();
      app.add_option("--exact", o->exact,
                     "the exact reference: auto (a stored /outputs/exact or /outputs/exact_cuda, else the "
                     "device mirror for a large fixture when a device is present, else the CPU), exact, "
                     "exact_cuda, or any backend spec")
          ->capture_default_str();
      app.add_flag("--allow-slow", o->allow_slow,
                   "start even when the CPU work is estimated over the limit (10 min; env TOUCHSTONE_SLOW_LIMIT_S)");
      app.add_flag("--allow-nonfinite", o->allow_nonfinite, "accept NaN/Inf in the fixture inputs");
      ts::cli::add_json_option(app, o->json, "the result");
      ts::cli::set_example(app, "touchstone sweep f.h5 --tau 0,1,1.3,2 --exact auto");
      return [o] { return run(*o); };
    }};

}  // namespace
