#pragma once
// Strict JSON input for gate and measurements files: every error is an
// InputError of one line naming the file and the JSON path
// ("gate.json: rules[1].max: expected a number, got string").
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace ts::json_input {

// Parses `text`; bad JSON names line and column, a key repeated within one
// object is an error (the second would silently win otherwise).
nlohmann::json parse(const std::string& text, const std::string& where);
// Reads and parses a file; a missing or unreadable file is an InputError.
nlohmann::json read_file(const std::string& path);
std::string read_text(const std::string& path);

// "string", "number", "boolean", "array", "object", "null".
std::string type_name(const nlohmann::json& j);

// Typed access to one JSON object; finish() refuses every key no getter
// asked for, so a misspelt key is an error rather than silently ignored.
class ObjectReader {
 public:
  // Throws when `obj` is not an object. `path` is "" for the root.
  ObjectReader(const nlohmann::json& obj, std::string where, std::string path);

  // Declares every key the object may hold and refuses at once one outside
  // them, naming the nearest ("againts: unknown key (did you mean
  // 'against'? ...)"): the checks that come before finish() would otherwise
  // read a misspelt key as an absent one ("mx": "rule has no bound"). The
  // getters then take only these keys (another is touchstone's own bug).
  void allow_only(std::vector<std::string> keys);

  std::string path_of(const std::string& key) const;
  [[noreturn]] void fail(const std::string& key, const std::string& message) const;

  bool has(const std::string& key) const;
  const nlohmann::json& required(const std::string& key);
  const nlohmann::json* optional(const std::string& key);

  std::string req_string(const std::string& key, bool nonempty = true);
  std::optional<std::string> opt_string(const std::string& key);
  double req_number(const std::string& key);
  std::optional<double> opt_number(const std::string& key);
  std::optional<bool> opt_bool(const std::string& key);
  const nlohmann::json& req_array(const std::string& key);
  const nlohmann::json& req_object(const std::string& key);

  // Refuses a key no getter asked for (with the nearest of those asked for,
  // or of the declared ones).
  void finish() const;

 private:
  const nlohmann::json& obj_;
  std::string where_, path_;
  std::set<std::string> used_;
  std::vector<std::string> allowed_;  // empty: not declared

  void use(const std::string& key);
  [[noreturn]] void fail_unknown(const std::string& key) const;
};

// "rules" + 1 -> "rules[1]"; "" + "max" -> "max"; "rules[1]" + "max" -> "rules[1].max".
std::string join(const std::string& path, const std::string& key);
std::string index(const std::string& path, size_t i);

}  // namespace ts::json_input
