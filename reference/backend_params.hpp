#pragma once
// key=value parameters of a backend ("sol:tau=1.3,precision=int8_qk").
// Every factory reads its keys through this class and then calls finish(),
// so an unknown or misspelt key is an error naming it, never silently ignored.
#include <map>
#include <set>
#include <string>
#include <vector>

namespace ts {

class BackendParams {
 public:
  BackendParams() = default;
  // "kind:key=value,key=value" or "kind" alone. Throws InputError.
  static BackendParams parse(const std::string& spec);

  const std::string& kind() const { return kind_; }
  const std::string& spec() const { return spec_; }
  bool has(const std::string& key) const { return values_.count(key) != 0; }
  void set(const std::string& key, const std::string& value) { values_[key] = value; }

  std::string get_string(const std::string& key, const std::string& fallback);
  std::string get_choice(const std::string& key, const std::string& fallback,
                         const std::vector<std::string>& allowed);
  double get_double(const std::string& key, double fallback);
  long long get_int(const std::string& key, long long fallback);
  bool get_bool(const std::string& key, bool fallback);  // true/false/on/off/1/0

  // Throws InputError naming every key that no getter asked for.
  void finish() const;

 private:
  std::string kind_, spec_;
  std::map<std::string, std::string> values_;
  std::set<std::string> used_;
};

// A parameter's value as backend names and messages show it ("%g": 1.3, 0.05).
std::string backend_param_text(double v);

}  // namespace ts
