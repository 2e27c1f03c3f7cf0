// touchstone bench block: the block reference's time per stage and in total,
// and the process's peak resident memory, on synthetic inputs of a preset.
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <omp.h>

#include "core/error.hpp"
#include "fixtures/synth.hpp"
#include "fixtures/block/synth_block.hpp"
#include "drivers/run_estimate.hpp"
#include "kernels_under_test/registry.hpp"
#include "reference/block.hpp"
#include "reference/numerics/nvfp4.hpp"
#include "tools/command.hpp"

namespace cmd_bench_block {

// VmHWM of /proc/self/status (peak resident set), in bytes; -1 if unreadable.
double vm_hwm_bytes() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::stod(line.substr(6)) * 1024.0;
  return -1;
}

struct Opts {
  std::string preset = "ci", linear = "fp64", recipe = "te", attention = "exact", block_backend = "block";
  uint64_t seed = 1;
  ts::cli::ReportTarget json;
};

int run(const Opts& o) {
  ts::BlockOptions bo;
  bo.linear = ts::linear_mode_from_name(o.linear);
  if (bo.linear == ts::LinearMode::nvfp4) {
    ts::num::nvfp4_recipe_from_name(o.recipe);
    bo.recipe = o.recipe;
  }
  const ts::BlockBackendKind kind = ts::block_backend(o.block_backend);
  if (kind.device) ts::require_device_for(kind.name);
  ts::require_device_for(o.attention);
  auto attention = ts::make_attention_backend(o.attention, {});
  const auto t0 = std::chrono::steady_clock::now();
  ts::SynthOptions so;
  so.preset = o.preset;
  so.seed = o.seed;
  ts::BlockInputs in;
  {
    ts::SynthResult att = ts::synthesize(so);
    in = ts::synthesize_block_inputs(so, att);
  }
  const double synth_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const ts::BlockResult r = kind.run(in, *attention, bo);
  const double hwm = vm_hwm_bytes();

  const std::string name = ts::block_output_name(bo, attention->name(), kind.name);
  if (o.json.on()) {
    nlohmann::json stages = nlohmann::json::array();
    for (const auto& s : ts::block_stage_names())
      stages.push_back({{"stage", s}, {"ms", r.stage_ms.at(s)}, {"shape", r.stages.at(s).shape}});
    nlohmann::json j = {{"preset", o.preset},
                        {"run", name},
                        {"params", ts::block_params(bo, *attention, kind.name)},
                        {"tokens", in.config.tokens()},
                        {"threads", omp_get_max_threads()},
                        {"synth_s", synth_s},
                        {"stages", stages},
                        {"total_ms", r.total_ms},
                        {"transfer_ms", r.transfer_ms},
                        {"peak_rss_bytes", hwm}};
    o.json.emit(j.dump(2) + "\n");
    if (o.json.to_stdout()) return ts::kPass;
  }
  const auto& c = in.config;
  std::printf("bench block %s: %s, S=%lld M=%lld H=%lld D=%lld F=%lld, %d threads (inputs synthesized in %.1f s)\n",
              o.preset.c_str(), name.c_str(), static_cast<long long>(c.tokens()),
              static_cast<long long>(c.hidden), static_cast<long long>(c.heads),
              static_cast<long long>(c.head_dim), static_cast<long long>(c.ffn_hidden),
              omp_get_max_threads(), synth_s);
  std::printf("%-10s %12s %7s\n", "stage", "ms", "share");
  for (const auto& s : ts::block_stage_names()) {
    const double ms = r.stage_ms.at(s);
    std::printf("%-10s %12.2f %6.1f%%\n", s.c_str(), ms, r.total_ms > 0 ? 100.0 * ms / r.total_ms : 0.0);
  }
  std::printf("%-10s %12.2f\n", "total", r.total_ms);
  if (kind.device) std::printf("%-10s %12.2f (host<->device copies outside the stages, in total)\n", "transfers", r.transfer_ms);
  std::printf("peak resident memory (VmHWM) %.2f GiB\n", hwm / (1024.0 * 1024.0 * 1024.0));
  return ts::kPass;
}

ts::cli::Registration reg{
    "bench block",
    "Time the block reference stage by stage on synthetic inputs of a preset, with peak memory",
    [](CLI::App& app) -> ts::cli::Action {
      auto o = std::make_shared<Opts>();
      app.add_option("--preset", o->preset, ts::preset_names_text(" | ") + " (block.md)")->capture_default_str();
      app.add_option("--linear", o->linear, "fp64 | bf16 | nvfp4")->capture_default_str();
      app.add_option("--recipe", o->recipe, "NVFP4 recipe: te | modelopt")->capture_default_str();
      app.add_option("--attention", o->attention, "attention backend spec (exact, sage2:preset=NAME, sol:...)")
          ->capture_default_str();
      app.add_option("--block-backend", o->block_backend, "block (host) | block_cuda (device)")
          ->capture_default_str();
      ts::cli::add_seed_option(app, o->seed, "synthesis seed");
      ts::cli::add_json_option(app, o->json, "the result");
      ts::cli::set_example(app, "touchstone bench block --preset ci --linear nvfp4");
      return [o] { return run(*o); };
    }};

}  // namespace cmd_bench_block
