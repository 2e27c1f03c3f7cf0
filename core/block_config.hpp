#pragma once
// The block's geometry as /config of a fixture describes it (docs/fixture-format.md),
// and the presets of block.md. Shared by fixtures, the reference and the gates.
#include <cstdint>
#include <string>
#include <vector>

namespace ts {

struct Segment {
  std::string name;   // "video", "audio", "text", ...
  bool video = true;  // kind "video" (routed) or "cond" (never routed)
  int64_t start = 0;
  int64_t length = 0;
  int64_t end() const { return start + length; }
};

struct BlockConfig {
  int64_t hidden = 0, heads = 0, head_dim = 0, ffn_hidden = 0;
  int64_t grid_t = 0, grid_h = 0, grid_w = 0;
  std::vector<Segment> segments;
  std::string token_order = "thw";
  double rms_eps = 1e-5;
  double rope_theta = 10000.0;
  int64_t rope_rot_dims = 0;
  int64_t rope_freqs_per_axis = 0;
  std::string qkv_layout = "BSHD";
  double softmax_scale = 0.0;

  int64_t tokens() const;        // S: sum of segment lengths
  int64_t video_tokens() const;  // grid_t * grid_h * grid_w

  // Checks every rule of docs/fixture-format.md that /config alone decides
  // (segments cover [0, S) without gap or overlap, rope_rot_dims even and
  // <= head_dim, head_dim even, rope_freqs_per_axis = rope_rot_dims / 6, ...).
  // Throws InputError naming `where` and the rule.
  void validate(const std::string& where) const;

  // Latent frame of packed token s, or -1 for conditioning tokens; used for
  // the per-frame metric breakdown. Honours token_order (thw or tile:TTxTHxTW).
  int64_t frame_of_token(int64_t s) const;
};

std::string segments_to_json(const std::vector<Segment>& segs);
std::vector<Segment> segments_from_json(const std::string& text, const std::string& where);
// The segment kinds /config segments may name: "video" (routed) and "cond".
const std::vector<std::string>& segment_kinds();

// The presets of block.md: tiny, ci, medium, block24. Throws InputError for others.
BlockConfig preset_config(const std::string& name);
std::vector<std::string> preset_names();
// "tiny | ci | medium | block24" with `sep` between: for help texts and messages.
std::string preset_names_text(const std::string& sep);

}  // namespace ts
