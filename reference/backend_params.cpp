#include "reference/backend_params.hpp"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "core/error.hpp"
#include "core/printable.hpp"
#include "core/suggest.hpp"

namespace ts {

BackendParams BackendParams::parse(const std::string& spec) {
  BackendParams p;
  p.spec_ = spec;
  const auto colon = spec.find(':');
  p.kind_ = spec.substr(0, colon);
  if (p.kind_.empty()) throw InputError("backend '" + spec + "': missing backend name");
  if (colon == std::string::npos) return p;
  const std::string rest = spec.substr(colon + 1);
  size_t at = 0;
  while (at <= rest.size()) {
    size_t comma = rest.find(',', at);
    if (comma == std::string::npos) comma = rest.size();
    const std::string item = rest.substr(at, comma - at);
    at = comma + 1;
    if (item.empty()) {
      if (comma == rest.size()) break;
      throw InputError("backend '" + spec + "': empty parameter");
    }
    const auto eq = item.find('=');
    if (eq == std::string::npos || eq == 0)
      throw InputError("backend '" + spec + "': parameter '" + item + "' is not key=value");
    const std::string key = item.substr(0, eq);
    if (p.values_.count(key))
      throw InputError("backend '" + spec + "': parameter '" + key + "' given twice");
    p.values_[key] = item.substr(eq + 1);
  }
  return p;
}

std::string BackendParams::get_string(const std::string& key, const std::string& fallback) {
  used_.insert(key);
  auto it = values_.find(key);
  return it == values_.end() ? fallback : it->second;
}

std::string BackendParams::get_choice(const std::string& key, const std::string& fallback,
                                      const std::vector<std::string>& allowed) {
  const std::string v = get_string(key, fallback);
  for (const auto& a : allowed)
    if (a == v) return v;
  std::string list;
  for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
  throw InputError("backend '" + spec_ + "': " + key + "=" + v + " is not one of " + list);
}

double BackendParams::get_double(const std::string& key, double fallback) {
  used_.insert(key);
  auto it = values_.find(key);
  if (it == values_.end()) return fallback;
  const char* s = it->second.c_str();
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(s, &end);
  if (end == s || *end != '\0' || errno == ERANGE)
    throw InputError("backend '" + spec_ + "': " + key + "=" + it->second + " is not a number");
  // No parameter means anything at inf or nan: sol:tau=inf would keep nothing and judge as a
  // verdict what is a typo.
  if (!std::isfinite(v))
    throw InputError("backend '" + spec_ + "': " + key + "=" + it->second + " is not a finite number");
  return v;
}

long long BackendParams::get_int(const std::string& key, long long fallback) {
  used_.insert(key);
  auto it = values_.find(key);
  if (it == values_.end()) return fallback;
  const char* s = it->second.c_str();
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(s, &end, 10);
  if (end == s || *end != '\0' || errno == ERANGE)
    throw InputError("backend '" + spec_ + "': " + key + "=" + it->second + " is not an integer");
  return v;
}

bool BackendParams::get_bool(const std::string& key, bool fallback) {
  used_.insert(key);
  auto it = values_.find(key);
  if (it == values_.end()) return fallback;
  const std::string& v = it->second;
  if (v == "true" || v == "on" || v == "1") return true;
  if (v == "false" || v == "off" || v == "0") return false;
  throw InputError("backend '" + spec_ + "': " + key + "=" + v + " is not true/false/on/off/1/0");
}

void BackendParams::finish() const {
  // Every factory asks for each key it knows before finish(), so the keys
  // asked for are the known ones.
  std::vector<std::string> unknown;
  for (const auto& [k, v] : values_)
    if (!used_.count(k)) unknown.push_back(k);
  if (unknown.empty()) return;
  const std::vector<std::string> known(used_.begin(), used_.end());
  std::string hint;
  for (const auto& u : unknown) hint += did_you_mean(u, known);
  throw InputError("backend '" + printable(spec_) + "': unknown parameter" + (unknown.size() > 1 ? "s " : " ") +
                   printable(join_names(unknown)) + " (" + hint + "known for " + printable(kind_) + ": " +
                   (known.empty() ? std::string("none") : join_names(known)) + ")");
}

std::string backend_param_text(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

}  // namespace ts
