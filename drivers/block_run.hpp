#pragma once
// The block driver (touchstone reference F --block): the whole block on a fixture's /block
// inputs, every stage stored under /outputs/<name>/stages/<stage>.
#include <nlohmann/json.hpp>
#include <string>

#include "fixtures/fixture.hpp"
#include "reference/block.hpp"

namespace ts {

// The block inputs of a fixture (InputError when it has no /block/x). The
// observed stages are not kept, so a medium fixture's replay stays small.
BlockInputs load_block_inputs(const std::string& fixture);

// Runs the block with `linear` (fp64 | bf16 | nvfp4), `recipe` (nvfp4: te |
// modelopt) and the attention backend `attention_spec` (registry spec) on the
// block backend `block_backend` (block | block_cuda: block_backend_kinds), writes
// /outputs/<block_output_name>/stages/<stage> with per-stage wall_ms, and
// returns the per-stage time table as JSON and as text.
struct BlockRunReport {
  nlohmann::json json;
  std::string table;
};
BlockRunReport run_block_reference(const std::string& fixture, const std::string& linear,
                                   const std::string& recipe, const std::string& attention_spec,
                                   const std::string& block_backend = "block");

}  // namespace ts
