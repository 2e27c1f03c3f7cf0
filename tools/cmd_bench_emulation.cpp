// touchstone bench emulation: wall time of the sage2 and sol emulations beside
// the exact float64 reference on the same problem, in one run (median of
// --reps runs each), and each one's ratio to exact.
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>

#include "core/error.hpp"
#include "fixtures/attention_inputs.hpp"
#include "fixtures/fixture.hpp"
#include "fixtures/synth.hpp"
#include "kernels_under_test/registry.hpp"
#include "reference/sage2_presets.hpp"
#include "tools/command.hpp"

namespace cmd_bench_emulation {

using Clock = std::chrono::steady_clock;

struct Opts {
  std::string preset = "ci", fixture;
  int reps = 3;
  uint64_t seed = 1;
  std::vector<std::string> backends;
  ts::cli::ReportTarget json;
};

// exact, sage2 at each preset whose kernel differs from the ones before it
// (the same configuration would time the same code), and sol.
std::vector<std::string> default_backends() {
  std::vector<std::string> b = {"exact"};
  std::vector<nlohmann::json> seen;
  for (const auto& p : ts::sage2_presets()) {
    nlohmann::json knobs = ts::sage2_params(p.config);
    knobs.erase("preset");
    if (std::find(seen.begin(), seen.end(), knobs) == seen.end()) b.push_back(std::string("sage2:preset=") + p.name);
    seen.push_back(knobs);
  }
  for (const char* s : {"sol:tau=-100", "sol:tau=1.3", "sol:tau=3", "sol:tau=1.3,precision=int8_qk",
                        "sol:tau=1.3,precision=int8_qk_pv"})
    b.push_back(s);
  return b;
}

int run(const Opts& o) {
  if (o.reps < 1) throw ts::InputError("--reps must be >= 1");
  // Inputs: a fixture, or a synthetic one of the preset (attention tensors only).
  std::optional<ts::Fixture> fx;
  std::optional<ts::SynthResult> syn;
  ts::AttentionProblem problem;
  std::string source;
  if (!o.fixture.empty()) {
    fx = ts::load_fixture(o.fixture);
    problem = ts::attention_problem(*fx);
    source = o.fixture;
  } else {
    ts::SynthOptions so;
    so.preset = o.preset;
    so.seed = o.seed;
    syn = ts::synthesize(so);
    problem = ts::make_attention_problem(syn->dataset("/attention/q"), syn->dataset("/attention/k"),
                                         syn->dataset("/attention/v"), syn->config);
    source = "synthetic " + o.preset + " seed " + std::to_string(o.seed);
  }
  const auto specs = o.backends.empty() ? default_backends() : o.backends;

  struct Row {
    std::string spec, name;
    double ms;
    std::vector<double> samples;
    nlohmann::json stats;
  };
  std::vector<Row> rows;
  for (const auto& spec : specs) {
    auto b = ts::make_attention_backend(spec, {o.fixture});
    ts::AttentionResult r = b->run(problem);  // warm-up
    std::vector<double> ms;
    for (int i = 0; i < o.reps; ++i) {
      const auto t0 = Clock::now();
      r = b->run(problem);
      ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    }
    std::vector<double> sorted = ms;
    std::sort(sorted.begin(), sorted.end());
    rows.push_back({spec, b->name(), sorted[sorted.size() / 2], ms, r.stats});
  }
  double exact_ms = 0;
  for (const auto& r : rows)
    if (ts::BackendSpec::parse(r.spec).is_exact_reference()) {
      exact_ms = r.ms;
      break;
    }

  if (o.json.on()) {
    nlohmann::json j = {{"source", source},
                        {"S", problem.q.S},
                        {"H", problem.q.H},
                        {"D", problem.q.D},
                        {"threads", omp_get_max_threads()},
                        {"reps", o.reps},
                        {"rows", nlohmann::json::array()}};
    for (const auto& r : rows) {
      nlohmann::json row = {{"spec", r.spec}, {"name", r.name}, {"ms_median", r.ms}, {"ms", r.samples}};
      row["ratio_to_exact"] = exact_ms > 0 ? nlohmann::json(r.ms / exact_ms) : nlohmann::json(nullptr);
      if (r.stats.contains("density")) row["density"] = r.stats["density"];
      j["rows"].push_back(row);
    }
    o.json.emit(j.dump(2) + "\n");
    if (o.json.to_stdout()) return ts::kPass;
  }
  std::printf("emulation timings, %s: S=%lld H=%lld D=%lld, %d thread(s), median of %d\n",
              source.c_str(), (long long)problem.q.S, (long long)problem.q.H,
              (long long)problem.q.D, omp_get_max_threads(), o.reps);
  std::printf("  %-36s %10s %8s %8s\n", "backend", "ms", "x exact", "density");
  for (const auto& r : rows) {
    char ratio[32] = "-", dens[32] = "-";
    if (exact_ms > 0) std::snprintf(ratio, sizeof ratio, "%.2f", r.ms / exact_ms);
    if (r.stats.contains("density") && r.stats["density"].is_number())
      std::snprintf(dens, sizeof dens, "%.3f", r.stats["density"].get<double>());
    std::printf("  %-36s %10.1f %8s %8s\n", r.name.c_str(), r.ms, ratio, dens);
  }
  return ts::kPass;
}

ts::cli::Registration reg{
    "bench emulation",
    "Time the sage2 and sol emulations beside the exact reference (median ms, ratio to exact)",
    [](CLI::App& app) -> ts::cli::Action {
      auto o = std::make_shared<Opts>();
      app.add_option("--preset", o->preset, "synthetic preset when no --fixture: tiny | ci | medium")
          ->capture_default_str();
      app.add_option("--fixture", o->fixture, "time on this fixture's attention inputs instead");
      app.add_option("--reps", o->reps, "timed repetitions per backend (after one warm-up)")
          ->capture_default_str()
          ->check(ts::cli::integer_in(1, 1000000));
      ts::cli::add_seed_option(app, o->seed, "synthesis seed");
      app.add_option("--backend", o->backends,
                     "backend spec to time (repeatable; default: exact, sage2 at each distinct preset, "
                     "sol at tau -100, 1.3, 3 and the int8 precisions)");
      ts::cli::add_json_option(app, o->json, "the result");
      ts::cli::set_example(app, "touchstone bench emulation --preset ci");
      return [o] { return run(*o); };
    }};

}  // namespace cmd_bench_emulation
