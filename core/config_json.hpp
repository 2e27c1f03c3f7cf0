#pragma once
// /config as JSON: what a fixture writer (Python's capture included) hands
// over, completed with the format's defaults and checked by the one
// validation (BlockConfig::validate), so that no writer keeps its own copy of
// the rules (docs/fixture-format.md "/config").
#include <nlohmann/json.hpp>
#include <string>

#include "core/block_config.hpp"

namespace ts {

// Keys a /config must give; the rest have defaults (BlockConfig's members;
// rope_freqs_per_axis = rope_rot_dims / 6, softmax_scale = 1/sqrt(head_dim)).
const std::vector<std::string>& config_required_keys();

// `segments` may be a JSON array or its text. Unknown keys, wrong types and
// every rule of validate() are InputErrors naming `where`.
BlockConfig config_from_json(const nlohmann::json& j, const std::string& where);
// The attributes as a fixture stores them (segments as JSON text).
nlohmann::json config_to_json(const BlockConfig& c);

}  // namespace ts
