#include "reference/block.hpp"

#include <chrono>
#include <cmath>

#include "core/error.hpp"
#include "core/progress.hpp"
#include "core/stopwatch.hpp"
#include "reference/block_linear.hpp"
#include "reference/block_stages.hpp"

namespace ts {

LinearMode linear_mode_from_name(const std::string& name) {
  if (name == "fp64") return LinearMode::fp64;
  if (name == "bf16") return LinearMode::bf16;
  if (name == "nvfp4") return LinearMode::nvfp4;
  throw InputError("unknown linear mode '" + name + "' (expected fp64, bf16 or nvfp4)");
}

const char* linear_mode_name(LinearMode mode) {
  switch (mode) {
    case LinearMode::fp64: return "fp64";
    case LinearMode::bf16: return "bf16";
    case LinearMode::nvfp4: return "nvfp4";
  }
  throw InternalError("linear_mode_name: unknown mode");
}

const Tensor& BlockInputs::weight(const std::string& name) const {
  auto it = weights.find(name);
  if (it == weights.end()) throw InputError("block: missing weight '" + name + "'");
  return it->second;
}

const Tensor* BlockInputs::bias(const std::string& name) const {
  auto it = weights.find(name);
  return it == weights.end() ? nullptr : &it->second;
}

void BlockInputs::validate(const std::string& where) const {
  const BlockConfig& c = config;
  const int64_t S = c.tokens(), M = c.hidden, H = c.heads, D = c.head_dim, F = c.ffn_hidden;
  auto expect = [&](const Tensor& t, const std::string& name, std::vector<int64_t> shape) {
    if (t.shape != shape) {
      Tensor probe;
      probe.shape = shape;
      throw InputError(where + ": " + name + " has shape " + t.shape_string() + ", expected " +
                       probe.shape_string());
    }
    for (double v : t.data)
      if (!std::isfinite(v)) throw InputError(where + ": " + name + " holds NaN or Inf");
  };
  expect(x, "x", {S, M});
  if (modulation.rank() != 3 || modulation.dim(0) < 1)
    throw InputError(where + ": modulation has shape " + modulation.shape_string() +
                     ", expected [R, 6, " + std::to_string(M) + "]");
  const int64_t R = modulation.dim(0);
  expect(modulation, "modulation", {R, 6, M});
  if (modulation_row.empty()) {
    if (R != 1)
      throw InputError(where + ": modulation has " + std::to_string(R) +
                       " rows but modulation_row is absent (needed when R > 1)");
  } else {
    if (static_cast<int64_t>(modulation_row.size()) != S)
      throw InputError(where + ": modulation_row has " + std::to_string(modulation_row.size()) +
                       " entries, expected " + std::to_string(S));
    for (size_t s = 0; s < modulation_row.size(); ++s)
      if (modulation_row[s] < 0 || modulation_row[s] >= R)
        throw InputError(where + ": modulation_row[" + std::to_string(s) + "] = " +
                         std::to_string(modulation_row[s]) + " is outside [0, " +
                         std::to_string(R) + ")");
  }
  expect(positions, "positions", {S, 3});
  const std::vector<std::pair<std::string, std::vector<int64_t>>> required = {
      {"norm1_w", {M}},         {"norm2_w", {M}},   {"w_qkv", {3 * H * D, M}},
      {"q_norm", {D}},          {"k_norm", {D}},    {"w_out", {M, H * D}},
      {"w_fc1", {2 * F, M}},    {"w_fc2", {M, F}}};
  for (const auto& [name, shape] : required) expect(weight(name), "weights/" + name, shape);
  const std::vector<std::pair<std::string, int64_t>> biases = {
      {"b_qkv", 3 * H * D}, {"b_out", M}, {"b_fc1", 2 * F}, {"b_fc2", M}};
  for (const auto& [name, n] : biases)
    if (const Tensor* b = bias(name)) expect(*b, "weights/" + name, {n});
  for (const auto& [name, t] : weights) {
    bool known = false;
    for (const auto& r : required) known = known || r.first == name;
    for (const auto& r : biases) known = known || r.first == name;
    if (!known) throw InputError(where + ": unknown weight 'weights/" + name + "'");
  }
}

BlockInputs block_inputs_from_map(const BlockConfig& config, std::map<std::string, Tensor>&& block,
                                  const std::string& where) {
  BlockInputs in;
  in.config = config;
  auto take = [&](const std::string& name) {
    auto it = block.find(name);
    if (it == block.end()) throw InputError(where + ": /block/" + name + " is missing");
    Tensor t = std::move(it->second);
    block.erase(it);
    return t;
  };
  in.x = take("x");
  in.modulation = take("modulation");
  in.positions = take("positions");
  if (auto it = block.find("modulation_row"); it != block.end()) {
    const Tensor& r = it->second;
    for (double v : r.data) {
      if (v != std::floor(v) || v < 0 || v > 2147483647.0)
        throw InputError(where + ": /block/modulation_row holds a value that is not a row index");
      in.modulation_row.push_back(static_cast<int32_t>(v));
    }
    block.erase(it);
  }
  const std::string prefix = "weights/";
  for (auto it = block.begin(); it != block.end();) {
    if (it->first.rfind(prefix, 0) == 0) {
      in.weights.emplace(it->first.substr(prefix.size()), std::move(it->second));
      it = block.erase(it);
    } else {
      ++it;
    }
  }
  in.validate(where);
  return in;
}

std::string block_output_name(const BlockOptions& opts, const std::string& attention_name,
                              const std::string& block_backend) {
  std::string lin = linear_mode_name(opts.linear);
  if (opts.linear == LinearMode::nvfp4) lin += "-" + opts.recipe;
  return block_backend + "_" + lin + "_" + attention_name;
}

nlohmann::json block_params(const BlockOptions& opts, const AttentionBackend& attention,
                            const std::string& block_backend) {
  nlohmann::json p = {{"linear", linear_mode_name(opts.linear)},
                      {"attention", attention.name()},
                      {"attention_params", attention.params()}};
  if (block_backend != "block") p["block_backend"] = block_backend;
  if (opts.linear == LinearMode::nvfp4) {
    p["recipe"] = opts.recipe;
    p["activation_scale"] = "dynamic";
  }
  p["activations"] = opts.linear == LinearMode::fp64 ? "float64" : "bfloat16";
  return p;
}

BlockResult run_block(const BlockInputs& in, AttentionBackend& attention, const BlockOptions& opts) {
  in.validate("block");
  if (opts.linear == LinearMode::nvfp4 && opts.recipe.empty())
    throw InputError("block: nvfp4 needs a recipe (te or modelopt)");
  for (const auto& k : opts.keep) {
    bool known = false;
    for (const auto& n : block_stage_names()) known = known || n == k;
    if (!known) throw InputError("block: unknown stage '" + k + "'");
  }
  const BlockConfig& c = in.config;
  const int64_t S = in.tokens(), M = c.hidden, H = c.heads, D = c.head_dim, F = c.ffn_hidden;
  const blk::Arith ar = opts.linear == LinearMode::fp64 ? blk::Arith::f64 : blk::Arith::bf16;
  const blk::LinearSpec lin{opts.linear, opts.recipe, opts.chunk_tokens};

  BlockResult res;
  std::map<std::string, Tensor>& st = res.stages;
  const Stopwatch total;
  Progress progress("block stages", static_cast<int64_t>(block_stage_names().size()));
  using St = BlockStage;
  const auto N = [](BlockStage s) { return std::string(stage_name(s)); };
  auto timed = [&](BlockStage stage, auto&& fn) {
    const std::string name = N(stage);
    const Stopwatch t;
    st[name] = fn();
    res.stage_ms[name] = t.ms();
    progress.advance();
  };
  // A stage that is not asked for is dropped once nothing later reads it.
  auto done_with = [&](BlockStage stage) {
    if (opts.keep.empty()) return;
    const std::string name = N(stage);
    for (const auto& k : opts.keep)
      if (k == name) return;
    st.erase(name);
  };
  auto linear = [&](const Tensor& xin, int64_t K, const std::string& w, const std::string& b,
                    std::vector<int64_t> shape) {
    return blk::linear_stage(xin.ptr(), S, K, in.weight(w), in.bias(b), lin, std::move(shape));
  };

  timed(St::norm1, [&] { return blk::rms_norm_stage(in.x, in.weight("norm1_w"), c.rms_eps, ar); });
  timed(St::modulate1, [&] { return blk::modulate_stage(st[N(St::norm1)], in, kShiftMsa, kScaleMsa, ar); });
  done_with(St::norm1);
  timed(St::qkv, [&] { return linear(st[N(St::modulate1)], M, "w_qkv", "b_qkv", {S, 3, H, D}); });
  done_with(St::modulate1);
  timed(St::q_rope, [&] { return blk::qk_rope_stage(st[N(St::qkv)], 0, in.weight("q_norm"), in, ar); });
  timed(St::k_rope, [&] { return blk::qk_rope_stage(st[N(St::qkv)], 1, in.weight("k_norm"), in, ar); });
  timed(St::attention, [&] {
    return blk::attention_stage(st[N(St::qkv)], st[N(St::q_rope)], st[N(St::k_rope)], c, attention, ar,
                                res.attention_stats);
  });
  done_with(St::qkv);
  done_with(St::q_rope);
  done_with(St::k_rope);
  timed(St::out_proj, [&] { return linear(st[N(St::attention)], H * D, "w_out", "b_out", {S, M}); });
  done_with(St::attention);
  timed(St::residual1, [&] {
    return blk::gated_residual_stage(in.x, st[N(St::out_proj)], in, kGateMsa, ar);
  });
  done_with(St::out_proj);
  timed(St::norm2, [&] { return blk::rms_norm_stage(st[N(St::residual1)], in.weight("norm2_w"), c.rms_eps, ar); });
  timed(St::modulate2, [&] { return blk::modulate_stage(st[N(St::norm2)], in, kShiftMlp, kScaleMlp, ar); });
  done_with(St::norm2);
  timed(St::fc1, [&] { return linear(st[N(St::modulate2)], M, "w_fc1", "b_fc1", {S, 2 * F}); });
  done_with(St::modulate2);
  timed(St::swiglu, [&] { return blk::swiglu_stage(st[N(St::fc1)], ar); });
  done_with(St::fc1);
  timed(St::fc2, [&] { return linear(st[N(St::swiglu)], F, "w_fc2", "b_fc2", {S, M}); });
  done_with(St::swiglu);
  timed(St::output, [&] {
    return blk::gated_residual_stage(st[N(St::residual1)], st[N(St::fc2)], in, kGateMlp, ar);
  });
  done_with(St::residual1);
  done_with(St::fc2);
  res.total_ms = total.ms();
  return res;
}

}  // namespace ts
