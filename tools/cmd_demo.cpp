// touchstone demo: the main job on an embedded default. Synthesizes a `ci`
// fixture in a temporary folder, computes the exact reference, the sage2
// emulation and the routed sol backend at a few tau, compares them, and ends
// with the gate's verdict, as a kernel team would run it on a captured block.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>

#include "core/error.hpp"
#include "fixtures/attention_inputs.hpp"
#include "fixtures/fixture.hpp"
#include "fixtures/synth.hpp"
#include "gates/gate_file.hpp"
#include "gates/metrics.hpp"
#include "gates/report.hpp"
#include "kernels_under_test/registry.hpp"
#include "reference/sage2_presets.hpp"
#include "tools/command.hpp"
#include "drivers/gate_on_fixture.hpp"

namespace cmd_demo {

struct Opts {
  std::string preset = "ci", keep;
  uint64_t seed = 7;
  ts::cli::ReportTarget json;
  int pairs = 6;
};

struct Row {
  std::string spec, name;
  double ms = 0;
  std::optional<double> density;
  ts::MetricSet vs_exact, vs_sage2;
};

std::string fmt(const std::optional<double>& v, const char* f = "%.4g") {
  if (!v) return "undef";
  char buf[32];
  std::snprintf(buf, sizeof buf, f, *v);
  return buf;
}

int run(const Opts& o) {
  namespace fs = std::filesystem;
  // The fixture lives in a fresh temporary folder unless --keep names one.
  fs::path dir;
  bool remove_dir = false;
  if (o.keep.empty()) {
    std::string tmpl = (fs::temp_directory_path() / "touchstone-demo-XXXXXX").string();
    if (!mkdtemp(tmpl.data())) throw ts::InternalError("demo: cannot create a temporary folder");
    dir = tmpl;
    remove_dir = true;
  } else {
    dir = o.keep;
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) throw ts::InputError("--keep " + o.keep + ": " + ec.message());
  }
  const std::string path = (dir / ("demo_" + o.preset + ".h5")).string();
  struct Cleanup {
    fs::path d;
    bool on;
    ~Cleanup() {
      std::error_code ec;
      if (on) fs::remove_all(d, ec);
    }
  } cleanup{dir, remove_dir};

  ts::SynthOptions so;
  so.preset = o.preset;
  so.seed = o.seed;
  const auto t_syn = std::chrono::steady_clock::now();
  ts::write_synthetic(ts::synthesize(so), path, {});
  const double syn_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t_syn).count();
  const ts::Fixture fx = ts::load_fixture(path);
  const ts::AttentionProblem problem = ts::attention_problem(fx);

  // Every sage2 preset: the presets differ from each other about as much as
  // each differs from exact, which is what a Sage-like bound must allow.
  const std::string baseline = ts::sage2_default_spec();
  std::vector<std::string> specs = {"exact", "exact:precision=fp32"};
  for (const auto& p : ts::sage2_presets()) specs.push_back(std::string("sage2:preset=") + p.name);
  for (const char* s : {"sol:tau=-100", "sol:tau=0", "sol:tau=1.3", "sol:tau=1.3,precision=int8_qk", "sol:tau=3"})
    specs.push_back(s);
  std::vector<Row> rows;
  std::map<std::string, ts::Tensor> outs;
  for (const auto& spec : specs) {
    auto b = ts::make_attention_backend(spec, {path});
    const auto t0 = std::chrono::steady_clock::now();
    ts::AttentionResult r = b->run(problem);
    Row row;
    row.spec = spec;
    row.name = b->name();
    row.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (r.stats.contains("density")) row.density = r.stats["density"].get<double>();
    outs[spec] = std::move(r.out);
    rows.push_back(std::move(row));
  }
  const ts::Tensor& exact = outs.at("exact");
  const ts::Tensor& sage = outs.at(baseline);
  for (auto& row : rows) {
    row.vs_exact = ts::compute_metrics(outs.at(row.spec), exact);
    row.vs_sage2 = ts::compute_metrics(outs.at(row.spec), sage);
  }

  // The gate: is any sol point both faster than sage2 and Sage-like?
  ts::GateRunOptions go;
  go.pairs = o.pairs;
  go.seed = o.seed;
  const ts::GateRun gate = ts::run_gate_on_fixture(
      ts::load_gate("sparse_acceptance"), path, baseline,
      {"sol:tau=1.3", "sol:tau=1.3,precision=int8_qk", "sol:tau=-100"}, go);

  if (o.json.on()) {
    nlohmann::json j = {{"preset", o.preset}, {"seed", o.seed}, {"S", problem.q.S},
                        {"H", problem.q.H},   {"D", problem.q.D}, {"baseline", baseline},
                        {"backends", nlohmann::json::array()}};
    for (const auto& r : rows)
      j["backends"].push_back({{"spec", r.spec},
                               {"name", r.name},
                               {"ms", r.ms},
                               {"density", r.density ? nlohmann::json(*r.density) : nlohmann::json()},
                               {"vs_exact", r.vs_exact.to_json()},
                               {"vs_baseline", r.vs_sage2.to_json()}});
    j["gate"] = gate.to_json();
    o.json.emit(j.dump(2) + "\n");
    if (o.json.to_stdout()) return ts::kPass;
  }

  std::printf("touchstone demo: synthetic '%s' fixture (seed %llu), S=%lld tokens (%lld video, "
              "%lld conditioning), H=%lld, D=%lld; synthesized in %.1f s\n\n",
              o.preset.c_str(), (unsigned long long)o.seed, (long long)problem.q.S,
              (long long)fx.config.video_tokens(), (long long)(problem.q.S - fx.config.video_tokens()),
              (long long)problem.q.H, (long long)problem.q.D, syn_s);
  std::printf("%-34s %9s %8s %12s %10s %12s\n", "backend", "ms", "density", "rel_l2/exact",
              "cos/exact", "rel_l2/sage2");
  for (const auto& r : rows)
    std::printf("%-34s %9.1f %8s %12s %10s %12s\n", r.spec.c_str(), r.ms,
                r.density ? fmt(r.density, "%.3f").c_str() : "-", fmt(r.vs_exact.rel_l2).c_str(),
                fmt(r.vs_exact.cosine, "%.6f").c_str(), fmt(r.vs_sage2.rel_l2).c_str());
  std::printf("\nGate '%s' (baseline %s): a candidate must be Sage-like AND faster.\n",
              gate.gate.name.c_str(), baseline.c_str());
  std::fputs(ts::render_terminal(gate).c_str(), stdout);
  std::printf(
      "\nThe times above are CPU emulation times: they rank the emulations on this CPU, not GPU\n"
      "kernels. Judge real kernels by storing their outputs and timing samples in the fixture\n"
      "(--candidate stored:NAME) or by importing a benchmark report, e.g. the GB10 seed:\n"
      "  touchstone import-report gb10_sage2_vs_sol_block24.json -o m.json && touchstone gate --measurements m.json\n");
  if (remove_dir)
    std::printf("(the fixture was temporary; --keep DIR keeps it for the repro lines above)\n");
  std::printf("(the demo exits 0 when it ran; `touchstone gate` enforces the verdicts with its exit code)\n");
  return ts::kPass;
}

ts::cli::Registration reg{
    "demo",
    "The main job on an embedded default: synthesize a ci fixture, run exact, sage2 and sol "
    "backends, compare them, and gate sol against sage2",
    [](CLI::App& app) -> ts::cli::Action {
      auto o = std::make_shared<Opts>();
      app.add_option("--preset", o->preset, "synthetic preset: tiny | ci | medium")
          ->capture_default_str();
      app.add_option("--seed", o->seed, "synthesis seed")->capture_default_str();
      app.add_option("--pairs", o->pairs, "timing pairs per candidate in the gate (a speed rule needs at least 3)")
          ->capture_default_str()
          ->check(CLI::Range(1, 1000000));
      app.add_option("--keep", o->keep, "keep the fixture in this folder instead of a temporary one");
      ts::cli::add_json_option(app, o->json, "the result");
      ts::cli::set_example(app, "touchstone demo --preset ci");
      return [o] { return run(*o); };
    }};

}  // namespace cmd_demo
