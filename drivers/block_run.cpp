#include "drivers/block_run.hpp"

#include <cstdio>

#include "core/error.hpp"
#include "drivers/run_estimate.hpp"
#include "kernels_under_test/registry.hpp"
#include "reference/numerics/nvfp4.hpp"

namespace ts {

BlockInputs load_block_inputs(const std::string& fixture) {
  LoadOptions lo;
  lo.load_block = true;
  Fixture fx = load_fixture(fixture, lo);
  if (!fx.block.count("x"))
    throw InputError(fixture + ": /block/x is missing (not a block fixture; synthesize one with "
                               "`touchstone fixture synth --with-block`)");
  for (auto it = fx.block.begin(); it != fx.block.end();)
    it = it->first.rfind("stages/", 0) == 0 ? fx.block.erase(it) : std::next(it);
  return block_inputs_from_map(fx.config, std::move(fx.block), fixture + ": /block");
}

BlockRunReport run_block_reference(const std::string& fixture, const std::string& linear,
                                   const std::string& recipe, const std::string& attention_spec,
                                   const std::string& block_backend) {
  const BlockBackendKind kind = ts::block_backend(block_backend);
  if (kind.device) require_device_for(kind.name);
  BlockOptions opts;
  opts.linear = linear_mode_from_name(linear);
  if (opts.linear == LinearMode::nvfp4) {
    num::nvfp4_recipe_from_name(recipe);  // InputError for an unknown recipe
    opts.recipe = recipe;
  }
  require_device_for(attention_spec);
  auto attention = make_attention_backend(attention_spec, {fixture});
  const BlockInputs in = load_block_inputs(fixture);
  BlockResult r = kind.run(in, *attention, opts);

  const std::string name = block_output_name(opts, attention->name(), kind.name);
  const nlohmann::json params = block_params(opts, *attention, kind.name);
  std::vector<DatasetWrite> writes;
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& stage : block_stage_names()) {
    Tensor& t = r.stages.at(stage);
    const double ms = r.stage_ms.at(stage);
    rows.push_back({{"stage", stage}, {"shape", t.shape}, {"dtype", dtype_name(t.dtype)}, {"ms", ms}});
    nlohmann::json more = {{"stage", stage}};
    if (stage == "attention" && !r.attention_stats.empty()) more["stats"] = r.attention_stats.dump();
    writes.push_back({"/outputs/" + name + "/stages/" + stage, std::move(t),
                      output_attrs(name, params, ms, more)});
  }
  r.stages.clear();
  append_datasets(fixture, writes);

  BlockRunReport rep;
  rep.json = {{"fixture", fixture},    {"output", name},
              {"group", "/outputs/" + name + "/stages"},
              {"params", params},      {"stages", rows},
              {"total_ms", r.total_ms}, {"transfer_ms", r.transfer_ms},
              {"attention_stats", r.attention_stats}};
  std::string& o = rep.table;
  char line[256];
  std::snprintf(line, sizeof line, "%s: wrote /outputs/%s/stages (%zu stages)\n", fixture.c_str(), name.c_str(),
                block_stage_names().size());
  o += line;
  std::snprintf(line, sizeof line, "%-10s %-20s %-9s %11s %7s\n", "stage", "shape", "dtype", "ms", "share");
  o += line;
  for (const auto& row : rows) {
    std::string shape;
    for (const auto& d : row["shape"]) shape += (shape.empty() ? "[" : ", ") + std::to_string(d.get<int64_t>());
    shape += "]";
    const double ms = row["ms"].get<double>();
    std::snprintf(line, sizeof line, "%-10s %-20s %-9s %11.2f %6.1f%%\n", row["stage"].get<std::string>().c_str(),
                  shape.c_str(), row["dtype"].get<std::string>().c_str(), ms,
                  r.total_ms > 0 ? 100.0 * ms / r.total_ms : 0.0);
    o += line;
  }
  std::snprintf(line, sizeof line, "%-10s %-20s %-9s %11.2f\n", "total", "", "", r.total_ms);
  o += line;
  return rep;
}

}  // namespace ts
