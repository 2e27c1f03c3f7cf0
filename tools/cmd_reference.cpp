// touchstone reference F --backend B [knobs]: computes a backend's attention
// output on a fixture and stores it under /outputs/<name>/attention.
#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>

#include "core/decimal_text.hpp"
#include "core/error.hpp"
#include "core/phase.hpp"
#include "fixtures/attention_inputs.hpp"
#include "fixtures/fixture.hpp"
#include "kernels_under_test/registry.hpp"
#include "reference/sage2_presets.hpp"
#include "reference/backend_params.hpp"
#include "drivers/block_run.hpp"
#include "drivers/run_estimate.hpp"
#include "tools/command.hpp"

namespace cmd_reference {

struct Opts {
  std::string fixture, backend = "exact", preset, precision, recipe = "te", linear = "fp64";
  std::string attention = "exact", block_backend = "block";
  double tau = 0;
  bool have_tau = false, dump = false, block = false, allow_nonfinite = false, store_routing = false;
  ts::cli::ReportTarget json;
  std::vector<std::string> knobs;
  // The flags given, by the mode they belong to: an attention run's flags mean nothing to
  // --block and the block's to an attention run; either given to the other mode is refused.
  std::vector<const CLI::Option*> attention_flags, block_flags;
  const CLI::Option* recipe_flag = nullptr;
};

void check_modes(const Opts& o) {
  auto given = [](const std::vector<const CLI::Option*>& v) -> const CLI::Option* {
    for (const auto* f : v)
      if (f->count() > 0) return f;
    return nullptr;
  };
  auto flag = [](const CLI::Option* f) { return f->get_name().empty() ? std::string("knobs") : f->get_name(); };
  if (o.block) {
    if (const auto* f = given(o.attention_flags))
      throw ts::InputError(flag(f) + ": with --block, the block's attention is --attention SPEC (e.g. --attention " +
                           (o.backend == "exact" ? std::string("sage2") : o.backend) + "); " + flag(f) +
                           " is for a run of the attention alone");
    if (o.recipe_flag->count() > 0 && o.linear != "nvfp4")
      throw ts::InputError("--recipe " + o.recipe + ": the NVFP4 recipe applies to --linear nvfp4 only (got --linear " +
                           o.linear + ")");
  } else if (const auto* f = given(o.block_flags)) {
    throw ts::InputError(flag(f) + " applies to --block (the whole block) only");
  }
  // A stored output is already stored: "computing" it would rewrite the output from itself,
  // its backend and params replaced by the stored reader's, its provenance lost.
  const auto spec = ts::BackendSpec::try_parse(o.backend);
  if (spec && spec->is_stored())
    throw ts::InputError("--backend " + o.backend + ": a stored output is read where it is (compare F " +
                         spec->argument() + " exact, gate -c " + o.backend + "), not computed again");
}

// --backend sol --tau 1.3 --precision int8_qk k=v ... -> "sol:tau=1.3,precision=int8_qk,k=v"
std::string build_spec(const Opts& o) {
  std::string spec = o.backend;
  std::vector<std::string> kv;
  if (!o.preset.empty()) kv.push_back("preset=" + o.preset);
  if (!o.precision.empty()) kv.push_back("precision=" + o.precision);
  if (o.have_tau) {
    kv.push_back("tau=" + ts::shortest_decimal(o.tau));
  }
  if (o.dump) kv.push_back("dump=on");
  if (o.store_routing) kv.push_back("routing=on");
  for (const auto& k : o.knobs) {
    if (k.find('=') == std::string::npos)
      throw ts::InputError("knob '" + k + "' is not key=value");
    kv.push_back(k);
  }
  if (kv.empty()) return spec;
  spec += spec.find(':') == std::string::npos ? ":" : ",";
  for (size_t i = 0; i < kv.size(); ++i) spec += (i ? "," : "") + kv[i];
  return spec;
}

int run(const Opts& o) {
  check_modes(o);
  if (o.block) {
    const ts::BlockRunReport rep = ts::run_block_reference(o.fixture, o.linear, o.recipe, o.attention,
                                                                o.block_backend);
    o.json.emit(rep.json.dump(2) + "\n");
    if (!o.json.to_stdout()) std::cout << rep.table << std::flush;
    return ts::kPass;
  }
  const std::string spec = build_spec(o);
  if (o.store_routing && !ts::BackendSpec::parse(spec).routes())
    throw ts::InputError("--store-routing: only the sol family routes (backend sol or sol_cuda, not '" + o.backend + "')");
  ts::require_device_for(spec);
  std::optional<ts::Phase> setup(std::in_place, "backend");
  auto backend = ts::make_attention_backend(spec, {o.fixture});
  setup.reset();
  ts::LoadOptions lo;
  lo.allow_nonfinite = o.allow_nonfinite;
  lo.stored_inputs = backend->reads_stored_inputs();
  const ts::Fixture fx = [&] {
    ts::Phase ph("load fixture");
    return ts::load_fixture(o.fixture, lo);
  }();
  setup.emplace("problem");
  const ts::AttentionProblem problem = ts::attention_problem(fx);
  setup.reset();
  const auto t0 = std::chrono::steady_clock::now();
  ts::AttentionResult r = [&] {
    ts::Phase ph("run " + backend->name());
    return backend->run(problem);
  }();
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  const std::string group = "/outputs/" + backend->name();
  nlohmann::json more = nlohmann::json::object();
  if (!r.stats.empty()) more["stats"] = r.stats.dump();
  // The values move into the writes, not copied (at block24 an output is 2.2 GB of doubles);
  // shapes and types stay for the summary.
  auto take = [](ts::Tensor& t) {
    ts::Tensor m;
    m.shape = t.shape;
    m.dtype = t.dtype;
    m.data = std::move(t.data);
    return m;
  };
  std::vector<ts::DatasetWrite> writes;
  writes.push_back({group + "/attention", take(r.out), ts::output_attrs(backend->name(), backend->params(), ms, more)});
  for (auto& [key, t] : r.intermediates) {
    nlohmann::json attrs = ts::output_attrs(backend->name(), backend->params(), std::nullopt);
    // docs/fixture-format.md: quantised data names its scale dataset (q_int8 -> q_scale).
    const bool int8 = key.size() > 5 && key.ends_with("_int8"), fp8 = key.size() > 4 && key.ends_with("_fp8");
    if (int8 || fp8) {
      const std::string scale = key.substr(0, key.rfind('_')) + "_scale";
      if (r.intermediates.count(scale)) attrs["scale"] = group + "/intermediates/" + scale;
      attrs["codes"] = int8 ? "int8" : "float8_e4m3fn";
    }
    writes.push_back({group + "/intermediates/" + key, take(t), attrs});
  }
  for (auto& [key, d] : r.datasets) {
    nlohmann::json attrs = ts::output_attrs(backend->name(), backend->params(), std::nullopt);
    for (auto it = d.attrs.begin(); it != d.attrs.end(); ++it) attrs[it.key()] = it.value();
    writes.push_back({group + "/" + key, take(d.tensor), attrs});
  }
  {
    ts::Phase ph("write outputs");
    ts::append_datasets(o.fixture, writes);
  }
  if (o.json.on()) {
    nlohmann::json j = {{"fixture", o.fixture},      {"backend", backend->name()},
                        {"spec", spec},              {"params", backend->params()},
                        {"dataset", group + "/attention"}, {"wall_ms", ms},
                        {"stats", r.stats},          {"intermediates", nlohmann::json::array()}};
    for (auto& [key, t] : r.intermediates) j["intermediates"].push_back(group + "/intermediates/" + key);
    j["datasets"] = nlohmann::json::array();
    for (auto& [key, d] : r.datasets) j["datasets"].push_back(group + "/" + key);
    o.json.emit(j.dump(2) + "\n");
  }
  if (!o.json.to_stdout()) {
    std::printf("%s: wrote %s/attention %s %s in %.1f ms\n", o.fixture.c_str(), group.c_str(),
                r.out.shape_string().c_str(), ts::dtype_name(r.out.dtype), ms);
    if (r.stats.contains("density"))
      std::printf("routed density %.4f\n", r.stats["density"].get<double>());
    for (auto& [key, t] : r.intermediates)
      std::printf("  intermediate %s/intermediates/%s %s\n", group.c_str(), key.c_str(),
                  t.shape_string().c_str());
    for (auto& [key, d] : r.datasets)
      std::printf("  %s %s/%s %s\n", key.c_str(), group.c_str(), key.c_str(), d.tensor.shape_string().c_str());
  }
  return ts::kPass;
}

ts::cli::Registration reg{
    "reference",
    "Compute a backend's attention (or, with --block, the whole block) on a fixture and store it "
    "under /outputs/<name>",
    [](CLI::App& app) -> ts::cli::Action {
      auto o = std::make_shared<Opts>();
      app.add_option("fixture", o->fixture, "fixture file (touchstone.fixture/1)")->required();
      auto& af = o->attention_flags;
      auto& bf = o->block_flags;
      af.push_back(app.add_option("knobs", o->knobs, "extra backend parameters as key=value"));
      af.push_back(app.add_option("--backend,-b", o->backend,
                                  "exact | sage2 | sol | any computed backend, optionally with :key=value,...")
                       ->capture_default_str());
      af.push_back(app.add_option("--preset", o->preset, "sage2 preset: " + ts::sage2_preset_names(" | ")));
      af.push_back(app.add_option("--precision", o->precision, "exact: fp64 | fp32; sol: bf16 | int8_qk | int8_qk_pv"));
      af.push_back(app.add_option("--tau", o->tau, "sol routing threshold")
                       ->check(ts::cli::finite_number())
                       ->each([o](const std::string&) { o->have_tau = true; }));
      af.push_back(app.add_flag("--dump", o->dump, "store the backend's intermediates for triage"));
      af.push_back(app.add_flag("--store-routing", o->store_routing,
                                "sol, sol_cuda: store the routing decisions as /outputs/<name>/routing (uint8 [H, "
                                "query blocks, video blocks]; what python3 -m touchstone replay's flex_sol and "
                                "sparge_sol execute)"));
      app.add_flag("--block", o->block, "run the whole block stage by stage");
      bf.push_back(app.add_option("--linear", o->linear, "block linear mode: fp64 | bf16 | nvfp4")
                       ->capture_default_str());
      o->recipe_flag = app.add_option("--recipe", o->recipe, "NVFP4 recipe (--linear nvfp4): te | modelopt")
                           ->capture_default_str();
      bf.push_back(o->recipe_flag);
      bf.push_back(app.add_option("--attention", o->attention, "block attention backend spec")
                       ->capture_default_str());
      bf.push_back(app.add_option("--block-backend", o->block_backend,
                                  "where the block runs: block (host) | block_cuda (device, the host's bits for "
                                  "nvfp4 and bf16)")
                       ->capture_default_str());
      app.add_flag("--allow-nonfinite", o->allow_nonfinite, "accept NaN/Inf in input tensors");
      ts::cli::add_json_option(app, o->json, "the result");
      ts::cli::set_example(app, std::string("touchstone reference f.h5 --backend sage2 --preset ") +
                                   ts::sage2_default_preset().name);
      return [o] { return run(*o); };
    }};

}  // namespace cmd_reference
