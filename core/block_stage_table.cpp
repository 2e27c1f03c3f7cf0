#include "core/block_stage_table.hpp"

#include "core/error.hpp"

namespace ts {

// The default bounds follow the error through the block (docs/block.md
// "Stage bounds"): an NVFP4 linear turns an input difference into up to ~8x
// as much output difference (codes flip), the sage2 emulation is 1.1e-3 to
// 1.8e-3 from the real kernels, the residual stream damps what its branch
// adds, the rest carry their input's error 1:1. A difference of storage type
// (bf16 against float64) is allowed for by the growth rule's rounding term.
const std::vector<BlockStageInfo>& block_stage_table() {
  using S = BlockStage;
  using D = StageDim;
  static const std::vector<BlockStageInfo> t = {
      {S::norm1, "norm1", {D::tokens, D::hidden}, {}, false, 1e-3, 0.0, "norm"},
      {S::modulate1, "modulate1", {D::tokens, D::hidden}, {S::norm1}, true, 1e-3, 1.5, "modulate"},
      {S::qkv, "qkv", {D::tokens, D::three, D::heads, D::head_dim}, {S::modulate1}, false, 2e-3, 12.0,
       "qkv_projection"},
      {S::q_rope, "q_rope", {D::tokens, D::heads, D::head_dim}, {S::qkv}, false, 1e-3, 1.5, "rms_rope"},
      {S::k_rope, "k_rope", {D::tokens, D::heads, D::head_dim}, {S::qkv}, false, 1e-3, 1.5, "rms_rope"},
      {S::attention, "attention", {D::tokens, D::heads, D::head_dim}, {S::q_rope, S::k_rope, S::qkv}, false,
       5e-3, 3.0, "attention"},
      {S::out_proj, "out_proj", {D::tokens, D::hidden}, {S::attention}, false, 2e-3, 12.0, "output_projection"},
      {S::residual1, "residual1", {D::tokens, D::hidden}, {S::out_proj}, true, 1e-3, 1.0, "residual_gates"},
      {S::norm2, "norm2", {D::tokens, D::hidden}, {S::residual1}, false, 1e-3, 1.5, "norm"},
      {S::modulate2, "modulate2", {D::tokens, D::hidden}, {S::norm2}, true, 1e-3, 1.5, "modulate"},
      {S::fc1, "fc1", {D::tokens, D::ffn2}, {S::modulate2}, false, 2e-3, 12.0, "mlp_fc1"},
      {S::swiglu, "swiglu", {D::tokens, D::ffn}, {S::fc1}, true, 1e-3, 2.0, "swiglu"},
      {S::fc2, "fc2", {D::tokens, D::hidden}, {S::swiglu}, false, 2e-3, 12.0, "mlp_fc2"},
      {S::output, "output", {D::tokens, D::hidden}, {S::residual1, S::fc2}, true, 1e-3, 1.0, "residual_gates"},
  };
  return t;
}

const BlockStageInfo& block_stage(BlockStage s) {
  const auto& t = block_stage_table();
  const auto i = static_cast<size_t>(s);
  if (i >= t.size() || t[i].id != s) throw InternalError("block_stage: the table is out of order");
  return t[i];
}

const char* stage_name(BlockStage s) { return block_stage(s).name; }

const BlockStageInfo* find_block_stage(const std::string& name) {
  for (const auto& s : block_stage_table())
    if (name == s.name) return &s;
  return nullptr;
}

const std::vector<std::string>& block_stage_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (const auto& s : block_stage_table()) v.emplace_back(s.name);
    return v;
  }();
  return names;
}

std::vector<int64_t> stage_shape(const BlockStageInfo& s, const BlockConfig& c) {
  std::vector<int64_t> out;
  for (StageDim d : s.shape) {
    switch (d) {
      case StageDim::tokens: out.push_back(c.tokens()); break;
      case StageDim::hidden: out.push_back(c.hidden); break;
      case StageDim::three: out.push_back(3); break;
      case StageDim::heads: out.push_back(c.heads); break;
      case StageDim::head_dim: out.push_back(c.head_dim); break;
      case StageDim::ffn: out.push_back(c.ffn_hidden); break;
      case StageDim::ffn2: out.push_back(2 * c.ffn_hidden); break;
    }
  }
  return out;
}

const char* stage_dim_source(StageDim d) {
  switch (d) {
    case StageDim::tokens: return "tokens";
    case StageDim::hidden: return "/config hidden";
    case StageDim::three: return "q, k, v";
    case StageDim::heads: return "/config heads";
    case StageDim::head_dim: return "/config head_dim";
    case StageDim::ffn: return "/config ffn_hidden";
    case StageDim::ffn2: return "2 x /config ffn_hidden";
  }
  return "?";
}

}  // namespace ts
