#include "gates/json_input.hpp"

#include <cmath>
#include <fstream>
#include <sstream>
#include <vector>

#include "core/error.hpp"

namespace ts::json_input {

std::string type_name(const nlohmann::json& j) {
  if (j.is_string()) return "string";
  if (j.is_boolean()) return "boolean";
  if (j.is_number()) return "number";
  if (j.is_array()) return "array";
  if (j.is_object()) return "object";
  return "null";
}

std::string join(const std::string& path, const std::string& key) {
  return path.empty() ? key : path + "." + key;
}

std::string index(const std::string& path, size_t i) {
  return path + "[" + std::to_string(i) + "]";
}

nlohmann::json parse(const std::string& text, const std::string& where) {
  // One set of keys per open object (arrays push an unused set), so a key
  // repeated inside one object is caught while parsing.
  std::vector<std::set<std::string>> keys;
  std::string duplicate;
  auto cb = [&](int, nlohmann::json::parse_event_t ev, nlohmann::json& parsed) {
    using E = nlohmann::json::parse_event_t;
    if (ev == E::object_start || ev == E::array_start) keys.emplace_back();
    if (ev == E::object_end || ev == E::array_end) {
      if (!keys.empty()) keys.pop_back();
    }
    if (ev == E::key && !keys.empty() && parsed.is_string()) {
      const auto k = parsed.get<std::string>();
      if (!keys.back().insert(k).second && duplicate.empty()) duplicate = k;
    }
    return true;
  };
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text, cb, true, false);
  } catch (const nlohmann::json::parse_error& e) {
    size_t line = 1, col = 1;
    const size_t upto = std::min(e.byte > 0 ? e.byte - 1 : 0, text.size());
    for (size_t i = 0; i < upto; ++i) {
      if (text[i] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    std::string msg = e.what();
    const auto colon = msg.rfind(": ");
    if (colon != std::string::npos) msg = msg.substr(colon + 2);
    throw InputError(where + ": invalid JSON at line " + std::to_string(line) + ", column " +
                     std::to_string(col) + ": " + msg);
  }
  if (!duplicate.empty()) throw InputError(where + ": duplicate key '" + duplicate + "'");
  return j;
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path + ": cannot open file");
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw InputError(path + ": cannot read file");
  return ss.str();
}

nlohmann::json read_file(const std::string& path) { return parse(read_text(path), path); }

ObjectReader::ObjectReader(const nlohmann::json& obj, std::string where, std::string path)
    : obj_(obj), where_(std::move(where)), path_(std::move(path)) {
  if (!obj_.is_object())
    throw InputError(where_ + ": " + (path_.empty() ? std::string("top level") : path_) +
                     ": expected an object, got " + type_name(obj_));
}

std::string ObjectReader::path_of(const std::string& key) const { return join(path_, key); }

void ObjectReader::fail(const std::string& key, const std::string& message) const {
  throw InputError(where_ + ": " + path_of(key) + ": " + message);
}

bool ObjectReader::has(const std::string& key) const { return obj_.contains(key); }

const nlohmann::json& ObjectReader::required(const std::string& key) {
  used_.insert(key);
  if (!obj_.contains(key)) fail(key, "missing");
  return obj_.at(key);
}

const nlohmann::json* ObjectReader::optional(const std::string& key) {
  used_.insert(key);
  if (!obj_.contains(key)) return nullptr;
  return &obj_.at(key);
}

std::string ObjectReader::req_string(const std::string& key, bool nonempty) {
  const auto& v = required(key);
  if (!v.is_string()) fail(key, "expected a string, got " + type_name(v));
  auto s = v.get<std::string>();
  if (nonempty && s.empty()) fail(key, "must not be empty");
  return s;
}

std::optional<std::string> ObjectReader::opt_string(const std::string& key) {
  const auto* v = optional(key);
  if (!v) return std::nullopt;
  if (!v->is_string()) fail(key, "expected a string, got " + type_name(*v));
  return v->get<std::string>();
}

double ObjectReader::req_number(const std::string& key) {
  const auto& v = required(key);
  if (!v.is_number()) fail(key, "expected a number, got " + type_name(v));
  const double d = v.get<double>();
  if (!std::isfinite(d)) fail(key, "expected a finite number");
  return d;
}

std::optional<double> ObjectReader::opt_number(const std::string& key) {
  if (!has(key)) {
    used_.insert(key);
    return std::nullopt;
  }
  return req_number(key);
}

std::optional<bool> ObjectReader::opt_bool(const std::string& key) {
  const auto* v = optional(key);
  if (!v) return std::nullopt;
  if (!v->is_boolean()) fail(key, "expected true or false, got " + type_name(*v));
  return v->get<bool>();
}

const nlohmann::json& ObjectReader::req_array(const std::string& key) {
  const auto& v = required(key);
  if (!v.is_array()) fail(key, "expected an array, got " + type_name(v));
  return v;
}

const nlohmann::json& ObjectReader::req_object(const std::string& key) {
  const auto& v = required(key);
  if (!v.is_object()) fail(key, "expected an object, got " + type_name(v));
  return v;
}

void ObjectReader::finish() const {
  for (auto it = obj_.begin(); it != obj_.end(); ++it) {
    if (!used_.count(it.key())) fail(it.key(), "unknown key");
  }
}

}  // namespace ts::json_input
