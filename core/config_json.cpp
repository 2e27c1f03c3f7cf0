#include "core/config_json.hpp"

#include <cmath>
#include <set>

#include "core/error.hpp"
#include "core/printable.hpp"

namespace ts {

namespace {

const std::set<std::string>& known_keys() {
  static const std::set<std::string> k = {"hidden", "heads", "head_dim", "ffn_hidden", "grid_t",
                                          "grid_h", "grid_w", "segments", "token_order", "rms_eps",
                                          "rope_theta", "rope_rot_dims", "rope_freqs_per_axis",
                                          "qkv_layout", "softmax_scale"};
  return k;
}

}  // namespace

const std::vector<std::string>& config_required_keys() {
  static const std::vector<std::string> k = {"hidden", "heads", "head_dim", "ffn_hidden", "grid_t",
                                             "grid_h", "grid_w", "segments", "rope_rot_dims"};
  return k;
}

BlockConfig config_from_json(const nlohmann::json& j, const std::string& where) {
  if (!j.is_object()) throw InputError(where + ": must be an object of /config attributes");
  std::string missing;
  for (const auto& k : config_required_keys())
    if (!j.contains(k)) missing += (missing.empty() ? "" : ", ") + k;
  if (!missing.empty()) throw InputError(where + ": missing " + missing);
  for (auto it = j.begin(); it != j.end(); ++it)
    if (!known_keys().count(it.key()))
      throw InputError(where + ": unknown key '" + printable(it.key()) + "'");
  auto integer = [&](const char* key) -> int64_t {
    const auto& v = j.at(key);
    // 12.0 from a float-typed writer is 12; 12.5 is not an integer.
    if (v.is_number_integer()) return v.get<int64_t>();
    if (v.is_number_float() && std::isfinite(v.get<double>()) && v.get<double>() == std::floor(v.get<double>()))
      return static_cast<int64_t>(v.get<double>());
    throw InputError(where + ": " + key + " must be an integer, got " + printable(v.dump()));
  };
  auto real = [&](const char* key) -> double {
    const auto& v = j.at(key);
    if (!v.is_number()) throw InputError(where + ": " + key + " must be a number, got " + printable(v.dump()));
    return v.get<double>();
  };
  auto text = [&](const char* key) -> std::string {
    const auto& v = j.at(key);
    if (!v.is_string()) throw InputError(where + ": " + key + " must be a string, got " + printable(v.dump()));
    return v.get<std::string>();
  };
  BlockConfig c;
  c.hidden = integer("hidden");
  c.heads = integer("heads");
  c.head_dim = integer("head_dim");
  c.ffn_hidden = integer("ffn_hidden");
  c.grid_t = integer("grid_t");
  c.grid_h = integer("grid_h");
  c.grid_w = integer("grid_w");
  const auto& segs = j.at("segments");
  if (!segs.is_string() && !segs.is_array())
    throw InputError(where + ": segments must be a list of {name, kind, start, length} or its JSON text");
  if (segs.is_string()) {
    c.segments = segments_from_json(segs.get<std::string>(), where);
  } else {
    // start is optional in a list: each segment then starts where the previous ended.
    nlohmann::json filled = segs;
    int64_t at = 0;
    for (auto& s : filled) {
      if (s.is_object() && !s.contains("start")) s["start"] = at;
      if (s.is_object() && s.contains("start") && s["start"].is_number_integer() && s.contains("length") &&
          s["length"].is_number_integer())
        at = s["start"].get<int64_t>() + s["length"].get<int64_t>();
    }
    c.segments = segments_from_json(filled.dump(), where);
  }
  c.rope_rot_dims = integer("rope_rot_dims");
  c.rope_freqs_per_axis = j.contains("rope_freqs_per_axis") ? integer("rope_freqs_per_axis") : c.rope_rot_dims / 6;
  if (j.contains("token_order")) c.token_order = text("token_order");
  if (j.contains("qkv_layout")) c.qkv_layout = text("qkv_layout");
  if (j.contains("rms_eps")) c.rms_eps = real("rms_eps");
  if (j.contains("rope_theta")) c.rope_theta = real("rope_theta");
  if (j.contains("softmax_scale"))
    c.softmax_scale = real("softmax_scale");
  else if (c.head_dim > 0)
    c.softmax_scale = 1.0 / std::sqrt(static_cast<double>(c.head_dim));
  c.validate(where);
  return c;
}

nlohmann::json config_to_json(const BlockConfig& k) {
  return {{"hidden", k.hidden},
          {"heads", k.heads},
          {"head_dim", k.head_dim},
          {"ffn_hidden", k.ffn_hidden},
          {"grid_t", k.grid_t},
          {"grid_h", k.grid_h},
          {"grid_w", k.grid_w},
          {"segments", segments_to_json(k.segments)},
          {"token_order", k.token_order},
          {"rms_eps", k.rms_eps},
          {"rope_theta", k.rope_theta},
          {"rope_rot_dims", k.rope_rot_dims},
          {"rope_freqs_per_axis", k.rope_freqs_per_axis},
          {"qkv_layout", k.qkv_layout},
          {"softmax_scale", k.softmax_scale}};
}

}  // namespace ts
