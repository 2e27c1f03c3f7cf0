#pragma once
// The one table of the block's stages (docs/block.md): name, shape, the stages
// each reads, whether it is elementwise, its default error bound and the name
// the seed's block profile gives it. Everything that lists stages (the block
// reference, fixture validation, the gate files, the stage comparison, the
// measurements importer) reads this table; tests/core/test_stage_table.cpp
// fails if a second list of stage names appears in the C++ sources.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/block_config.hpp"

namespace ts {

// In block order.
enum class BlockStage {
  norm1, modulate1, qkv, q_rope, k_rope, attention, out_proj,
  residual1, norm2, modulate2, fc1, swiglu, fc2, output
};

// A symbolic dimension of a stage's shape, resolved against /config.
enum class StageDim { tokens, hidden, three, heads, head_dim, ffn, ffn2 };

struct BlockStageInfo {
  BlockStage id;
  const char* name;
  std::vector<StageDim> shape;
  std::vector<BlockStage> inputs;  // the stages it reads (the block's input x aside)
  // Recomputable from its inputs one element (or row) at a time with the
  // block's own definition (compare --stages A recompute).
  bool elementwise;
  // Default growth bound: rel_l2 <= floor + growth x the largest rel_l2 of its
  // inputs (docs/block.md "Stage bounds").
  double floor, growth;
  const char* profile_component;  // the seed's block profile calls it this
};

const std::vector<BlockStageInfo>& block_stage_table();
const BlockStageInfo& block_stage(BlockStage s);
const char* stage_name(BlockStage s);
// nullptr when `name` is not a stage.
const BlockStageInfo* find_block_stage(const std::string& name);
// The stage names in block order (a view of the table).
const std::vector<std::string>& block_stage_names();
std::vector<int64_t> stage_shape(const BlockStageInfo& s, const BlockConfig& c);
// What a dimension is, for error messages ("/config hidden").
const char* stage_dim_source(StageDim d);

}  // namespace ts
