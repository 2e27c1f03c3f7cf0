#include "core/block_config.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <set>

#include "core/error.hpp"
#include "core/printable.hpp"
#include "core/suggest.hpp"

namespace ts {

int64_t BlockConfig::tokens() const {
  int64_t s = 0;
  for (const auto& seg : segments) s += seg.length;
  return s;
}

int64_t BlockConfig::video_tokens() const { return grid_t * grid_h * grid_w; }

void BlockConfig::validate(const std::string& where) const {
  auto fail = [&](const std::string& msg) { throw InputError(where + ": " + msg); };
  // Sizes come from the file. Bounds far above any model (block24: hidden
  // 5376, 56 x 128 heads, 37810 tokens) keep every size derived from them
  // (3 x heads x head_dim, tokens x 2 x ffn_hidden, …) inside 64 bits: a
  // corrupt value is refused here, not multiplied into an overflow later
  // (fuzz_fixture found both; signed overflow is undefined behaviour).
  constexpr int64_t kMaxDim = int64_t(1) << 24, kMaxTokens = int64_t(1) << 31;
  auto positive = [&](int64_t v, const char* name) {
    if (v <= 0) fail(std::string(name) + " must be > 0, got " + std::to_string(v));
    if (v > kMaxDim)
      fail(std::string(name) + " " + std::to_string(v) + " is beyond touchstone's limit of " +
           std::to_string(kMaxDim) + " (a corrupt /config?)");
  };
  positive(hidden, "hidden");
  positive(heads, "heads");
  positive(head_dim, "head_dim");
  positive(ffn_hidden, "ffn_hidden");
  positive(grid_t, "grid_t");
  positive(grid_h, "grid_h");
  positive(grid_w, "grid_w");
  if (heads * head_dim > kMaxDim)
    fail("heads x head_dim " + std::to_string(heads * head_dim) + " is beyond touchstone's limit of " +
         std::to_string(kMaxDim) + " (a corrupt /config?)");
  if (head_dim % 2) fail("head_dim must be even, got " + std::to_string(head_dim));
  if (rope_rot_dims < 0 || rope_rot_dims % 2 || rope_rot_dims > head_dim)
    fail("rope_rot_dims must be even and <= head_dim (" + std::to_string(head_dim) + "), got " +
         std::to_string(rope_rot_dims));
  if (rope_rot_dims % 6 || rope_freqs_per_axis != rope_rot_dims / 6)
    fail("rope_freqs_per_axis must equal rope_rot_dims / 6 (rope_rot_dims " +
         std::to_string(rope_rot_dims) + ", rope_freqs_per_axis " +
         std::to_string(rope_freqs_per_axis) + ")");
  if (qkv_layout != "BSHD") fail("qkv_layout must be BSHD in schema v1, got '" + qkv_layout + "'");
  if (!(softmax_scale > 0) || !std::isfinite(softmax_scale))
    fail("softmax_scale must be a finite positive number");
  if (!(rms_eps > 0)) fail("rms_eps must be > 0");
  if (!(rope_theta > 0)) fail("rope_theta must be > 0");
  if (segments.empty()) fail("segments is empty");
  auto mul = [&](int64_t a, int64_t b, const std::string& what) {
    int64_t r = 0;
    if (__builtin_mul_overflow(a, b, &r)) fail(what + " overflows a 64-bit count");
    return r;
  };
  auto add = [&](int64_t a, int64_t b, const std::string& what) {
    int64_t r = 0;
    if (__builtin_add_overflow(a, b, &r)) fail(what + " overflows a 64-bit count");
    return r;
  };
  const int64_t grid = mul(mul(grid_t, grid_h, "grid_t*grid_h"), grid_w, "grid_t*grid_h*grid_w");
  int64_t expect = 0, video = 0;
  for (size_t i = 0; i < segments.size(); ++i) {
    const auto& s = segments[i];
    const std::string id = "segment " + std::to_string(i) + " '" + printable(s.name) + "'";
    if (s.length <= 0) fail(id + " has length " + std::to_string(s.length));
    if (s.start < expect)
      fail(id + " overlaps the previous segment (starts at " + std::to_string(s.start) +
           ", previous ends at " + std::to_string(expect) + ")");
    if (s.start > expect)
      fail(id + " leaves a gap (starts at " + std::to_string(s.start) + ", expected " +
           std::to_string(expect) + ")");
    expect = add(s.start, s.length, id + ": start + length");
    if (s.video) video = add(video, s.length, "the video segments' total");
  }
  if (expect > kMaxTokens)
    fail("the segments hold " + std::to_string(expect) + " tokens, beyond touchstone's limit of " +
         std::to_string(kMaxTokens) + " (a corrupt /config?)");
  if (video != grid)
    fail("video segments hold " + std::to_string(video) + " tokens but grid_t*grid_h*grid_w = " +
         std::to_string(grid));
  if (token_order != "thw" && token_order.rfind("tile:", 0) != 0)
    fail("token_order must be 'thw' or 'tile:TTxTHxTW', got '" + token_order + "'");
  if (token_order.rfind("tile:", 0) == 0) {
    // Checked here, on load, not first when a frame map is drawn.
    int tt = 0, th = 0, tw = 0;
    char rest = 0;
    if (std::sscanf(token_order.c_str(), "tile:%dx%dx%d%c", &tt, &th, &tw, &rest) != 3 || tt <= 0 || th <= 0 ||
        tw <= 0)
      fail("token_order '" + token_order + "' is not tile:TTxTHxTW (three positive tile sizes, e.g. tile:1x2x2)");
  }
}

int64_t BlockConfig::frame_of_token(int64_t s) const {
  int64_t offset = 0;
  for (const auto& seg : segments) {
    if (s >= seg.start && s < seg.end()) {
      if (!seg.video) return -1;
      const int64_t v = offset + (s - seg.start);  // index among video tokens
      const int64_t per_frame = grid_h * grid_w;
      if (token_order.rfind("tile:", 0) == 0) {
        int tt = 1, th = 1, tw = 1;
        if (std::sscanf(token_order.c_str(), "tile:%dx%dx%d", &tt, &th, &tw) != 3 || tt <= 0 ||
            th <= 0 || tw <= 0)
          throw InputError("token_order '" + token_order + "' is not tile:TTxTHxTW");
        const int64_t tile = int64_t(tt) * th * tw;
        const int64_t tiles_h = (grid_h + th - 1) / th, tiles_w = (grid_w + tw - 1) / tw;
        const int64_t tile_idx = v / tile;
        const int64_t tile_t = tile_idx / (tiles_h * tiles_w);
        return std::min(grid_t - 1, tile_t * tt + (v % tile) / (int64_t(th) * tw));
      }
      return std::min(grid_t - 1, v / per_frame);
    }
    if (seg.video) offset += seg.length;
  }
  return -1;
}

std::string segments_to_json(const std::vector<Segment>& segs) {
  nlohmann::json j = nlohmann::json::array();
  for (const auto& s : segs)
    j.push_back({{"name", s.name}, {"kind", s.video ? "video" : "cond"}, {"start", s.start},
                 {"length", s.length}});
  return j.dump();
}

const std::vector<std::string>& segment_kinds() {
  static const std::vector<std::string> kinds = {"video", "cond"};
  return kinds;
}

std::vector<Segment> segments_from_json(const std::string& text, const std::string& where) {
  nlohmann::json j;
  // A key repeated within one object is an error (the second would silently
  // win), as in gate files; segments are two levels deep at most.
  std::vector<std::set<std::string>> keys;
  std::string repeated;
  bool too_deep = false;
  auto check = [&](int depth, nlohmann::json::parse_event_t ev, nlohmann::json& parsed) {
    using E = nlohmann::json::parse_event_t;
    if (depth > 8) too_deep = true;
    if (ev == E::object_start) keys.emplace_back();
    if (ev == E::object_end && !keys.empty()) keys.pop_back();
    if (ev == E::key && !keys.empty() && !keys.back().insert(parsed.get<std::string>()).second &&
        repeated.empty())
      repeated = parsed.get<std::string>();
    return !too_deep;
  };
  try {
    j = nlohmann::json::parse(text, check);
  } catch (const std::exception& e) {
    throw InputError(where + ": segments is not valid JSON");
  }
  if (too_deep) throw InputError(where + ": segments is nested too deeply (a list of objects)");
  if (!repeated.empty())
    throw InputError(where + ": segments repeats the key '" + printable(repeated) +
                     "' within one object");
  if (!j.is_array()) throw InputError(where + ": segments must be a JSON array");
  std::vector<Segment> out;
  for (size_t i = 0; i < j.size(); ++i) {
    const auto& e = j[i];
    const std::string at = where + ": segments[" + std::to_string(i) + "]";
    if (!e.is_object()) throw InputError(at + " must be an object");
    for (auto it = e.begin(); it != e.end(); ++it)
      if (it.key() != "name" && it.key() != "kind" && it.key() != "start" && it.key() != "length")
        throw InputError(at + " has unknown key '" + printable(it.key()) + "'");
    if (!e.contains("name") || !e["name"].is_string())
      throw InputError(at + ".name must be a string");
    if (!e.contains("kind") || !e["kind"].is_string())
      throw InputError(at + ".kind must be a string, one of " + join_names(segment_kinds()));
    if (const std::string kind = e["kind"].get<std::string>();
        std::find(segment_kinds().begin(), segment_kinds().end(), kind) == segment_kinds().end())
      throw InputError(at + ".kind is \"" + printable(kind) + "\", not a segment kind (" +
                       did_you_mean(kind, segment_kinds()) + "kinds: " + join_names(segment_kinds()) +
                       ": video tokens are routed, cond tokens never)");
    if (!e.contains("start") || !e["start"].is_number_integer())
      throw InputError(at + ".start must be an integer");
    if (!e.contains("length") || !e["length"].is_number_integer())
      throw InputError(at + ".length must be an integer");
    out.push_back({e["name"].get<std::string>(), e["kind"] == "video", e["start"].get<int64_t>(),
                   e["length"].get<int64_t>()});
  }
  return out;
}

namespace {
BlockConfig make(int64_t t, int64_t h, int64_t w, std::vector<std::pair<std::string, int64_t>> cond,
                 int64_t M, int64_t H, int64_t D, int64_t F, int64_t rot) {
  BlockConfig c;
  c.hidden = M;
  c.heads = H;
  c.head_dim = D;
  c.ffn_hidden = F;
  c.grid_t = t;
  c.grid_h = h;
  c.grid_w = w;
  c.segments.push_back({"video", true, 0, t * h * w});
  int64_t at = t * h * w;
  for (auto& [name, n] : cond) {
    c.segments.push_back({name, false, at, n});
    at += n;
  }
  c.rope_rot_dims = rot;
  c.rope_freqs_per_axis = rot / 6;
  c.softmax_scale = 1.0 / std::sqrt(static_cast<double>(D));
  return c;
}
}  // namespace

namespace {

// The size presets of block.md, once: every list, help text and check reads this.
struct SizePreset {
  const char* name;
  BlockConfig (*make)();
};
const std::vector<SizePreset>& size_presets() {
  // Conditioning splits keep block24's 414 audio + 100 text proportions.
  static const std::vector<SizePreset> t = {
      {"tiny", [] { return make(2, 4, 8, {{"audio", 4}, {"text", 4}}, 64, 2, 32, 128, 24); }},
      {"ci", [] { return make(4, 12, 16, {{"audio", 48}, {"text", 16}}, 512, 4, 128, 1024, 96); }},
      {"medium", [] { return make(8, 24, 42, {{"audio", 414}, {"text", 100}}, 1344, 14, 128, 3584, 96); }},
      {"block24", [] { return make(37, 24, 42, {{"audio", 414}, {"text", 100}}, 5376, 56, 128, 14336, 96); }},
  };
  return t;
}

}  // namespace

std::vector<std::string> preset_names() {
  std::vector<std::string> out;
  for (const auto& p : size_presets()) out.emplace_back(p.name);
  return out;
}

std::string preset_names_text(const std::string& sep) {
  std::string out;
  for (const auto& p : size_presets()) out += (out.empty() ? "" : sep) + std::string(p.name);
  return out;
}

BlockConfig preset_config(const std::string& name) {
  for (const auto& p : size_presets())
    if (name == p.name) return p.make();
  throw InputError("unknown preset '" + name + "' (expected " + preset_names_text(", ") + ")");
}

}  // namespace ts
