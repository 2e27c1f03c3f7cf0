#include "gates/json_input.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

#include "core/error.hpp"
#include "core/printable.hpp"
#include "core/suggest.hpp"

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

namespace {

// Builds the document from nlohmann's SAX events (no recursion, whatever the
// depth) and refuses, naming the JSON path, what the DOM parser would accept
// or turn into a crash: nesting past kMaxDepth (copying or printing such a
// value recurses once per level), a key repeated in one object (the second
// would silently win), a number too large for a double (the DOM parser throws
// a non-parse error) or one so small that it would read as 0.
class StrictBuilder {
 public:
  using json = nlohmann::json;
  explicit StrictBuilder(std::string where) : where_(std::move(where)) {}

  bool null() { return value(json(nullptr)); }
  bool boolean(bool b) { return value(json(b)); }
  bool number_integer(json::number_integer_t v) { return value(json(v)); }
  bool number_unsigned(json::number_unsigned_t v) { return value(json(v)); }
  bool number_float(json::number_float_t v, const std::string& literal) {
    if (v == 0 && has_nonzero_mantissa(literal))
      return fail(path() + ": number " + printable(literal) +
                  " is too small for a double (it would read as 0)");
    return value(json(v));
  }
  bool string(std::string& s) { return value(json(std::move(s))); }
  bool binary(json::binary_t& b) { return value(json(std::move(b))); }
  bool start_object(std::size_t) { return open(json::object()); }
  bool start_array(std::size_t) { return open(json::array()); }
  bool key(std::string& k) {
    Frame& f = frames_.back();
    if (f.node->contains(k))
      return fail(prefix(frames_.size() - 1) + "duplicate key '" + printable(k) + "'");
    f.key = std::move(k);
    return true;
  }
  bool end_object() { return close(); }
  bool end_array() { return close(); }
  bool parse_error(std::size_t position, const std::string& last_token,
                   const nlohmann::detail::exception& ex) {
    if (!error_.empty()) return false;  // ours, raised first
    if (ex.id == 406)  // number overflow: out_of_range, not a parse_error
      return fail(path() + ": number " + printable(last_token) + " is too large for a double");
    // "[json.exception.parse_error.101] parse error at line 1, column 4:
    // syntax error ...; last read: '...'": keep what follows the position.
    std::string msg = ex.what();
    const auto column = msg.find(", column ");
    const auto colon = msg.find(": ", column == std::string::npos ? 0 : column);
    if (colon != std::string::npos) msg = msg.substr(colon + 2);
    syntax_position_ = position;
    syntax_ = printable(msg);
    return false;
  }

  json root;
  std::string error_, syntax_;
  std::size_t syntax_position_ = 0;
  static constexpr std::size_t kMaxDepth = 128;

 private:
  struct Frame {
    json* node;
    std::string key;  // objects: the key of the value being read
  };

  static bool has_nonzero_mantissa(const std::string& lit) {
    for (char c : lit) {
      if (c == 'e' || c == 'E') break;
      if (c >= '1' && c <= '9') return true;
    }
    return false;
  }

  // The JSON path through the first `n` open containers; with all of them,
  // the path of the value being read: "rules[3].max".
  std::string path_through(std::size_t n) const {
    std::string p;
    for (std::size_t i = 0; i < n; ++i) {
      const Frame& f = frames_[i];
      // An outer array already holds the open container; the innermost one
      // has not yet received the value being read.
      if (f.node->is_array()) p = index(p, f.node->size() - (i + 1 < frames_.size() ? 1 : 0));
      else p = join(p, printable(f.key));
    }
    return p;
  }
  std::string path() const {
    const std::string p = path_through(frames_.size());
    return p.empty() ? "top level" : p;
  }
  std::string prefix(std::size_t n) const {
    const std::string p = path_through(n);
    return p.empty() ? "" : p + ": ";
  }

  bool fail(const std::string& message) {
    if (error_.empty()) error_ = message;
    return false;
  }

  json* place(json&& v) {
    if (frames_.empty()) {
      root = std::move(v);
      return &root;
    }
    json& parent = *frames_.back().node;
    if (parent.is_array()) {
      parent.push_back(std::move(v));
      return &parent.back();
    }
    json& slot = parent[frames_.back().key];
    slot = std::move(v);
    return &slot;
  }
  bool value(json&& v) {
    place(std::move(v));
    return true;
  }
  bool open(json&& container) {
    if (frames_.size() >= kMaxDepth)
      return fail(path() + ": nested deeper than " + std::to_string(kMaxDepth) + " levels");
    json* node = place(std::move(container));
    frames_.push_back({node, {}});
    return true;
  }
  bool close() {
    frames_.pop_back();
    return true;
  }

  std::string where_;
  std::vector<Frame> frames_;
};

}  // namespace

nlohmann::json parse(const std::string& text, const std::string& where) {
  StrictBuilder b(where);
  nlohmann::json::sax_parse(text, &b, nlohmann::json::input_format_t::json, true, false);
  if (!b.error_.empty()) throw InputError(where + ": " + b.error_);
  if (!b.syntax_.empty()) {
    size_t line = 1, col = 1;
    const size_t upto = std::min(b.syntax_position_ > 0 ? b.syntax_position_ - 1 : 0, text.size());
    for (size_t i = 0; i < upto; ++i) {
      if (text[i] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    throw InputError(where + ": invalid JSON at line " + std::to_string(line) + ", column " +
                     std::to_string(col) + ": " + b.syntax_);
  }
  return std::move(b.root);
}

std::string read_text(const std::string& path) {
  // O_NONBLOCK: a FIFO must not wait for a writer; only regular files are read
  // (/dev/zero would never end, a folder is no JSON).
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) throw InputError(path + ": cannot open file: " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    const bool dir = S_ISDIR(st.st_mode);
    ::close(fd);
    throw InputError(path + ": " + (dir ? "is a folder" : "is not a regular file (a device, FIFO or socket)") +
                     ", not a JSON file");
  }
  std::string text;
  text.reserve(static_cast<size_t>(st.st_size));
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      ::close(fd);
      throw InputError(path + ": cannot read file: " + std::strerror(err));
    }
    text.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return text;
}

nlohmann::json read_file(const std::string& path) { return parse(read_text(path), path); }

ObjectReader::ObjectReader(const nlohmann::json& obj, std::string where, std::string path)
    : obj_(obj), where_(std::move(where)), path_(std::move(path)) {
  if (!obj_.is_object())
    throw InputError(where_ + ": " + (path_.empty() ? std::string("top level") : path_) +
                     ": expected an object, got " + type_name(obj_));
}

void ObjectReader::allow_only(std::vector<std::string> keys) {
  allowed_ = std::move(keys);
  for (auto it = obj_.begin(); it != obj_.end(); ++it)
    if (std::find(allowed_.begin(), allowed_.end(), it.key()) == allowed_.end()) fail_unknown(it.key());
}

void ObjectReader::use(const std::string& key) {
  if (!allowed_.empty() && std::find(allowed_.begin(), allowed_.end(), key) == allowed_.end())
    throw InternalError(where_ + ": " + path_of(key) + ": read but not among the keys declared by allow_only");
  used_.insert(key);
}

void ObjectReader::fail_unknown(const std::string& key) const {
  const std::vector<std::string> known = allowed_.empty() ? std::vector<std::string>(used_.begin(), used_.end()) : allowed_;
  fail(key, "unknown key (" + did_you_mean(key, known) + "keys: " + join_names(known) + ")");
}

std::string ObjectReader::path_of(const std::string& key) const { return join(path_, key); }

void ObjectReader::fail(const std::string& key, const std::string& message) const {
  throw InputError(printable(where_ + ": " + path_of(key) + ": " + message));
}

bool ObjectReader::has(const std::string& key) const { return obj_.contains(key); }

const nlohmann::json& ObjectReader::required(const std::string& key) {
  use(key);
  if (!obj_.contains(key)) fail(key, "missing");
  return obj_.at(key);
}

const nlohmann::json* ObjectReader::optional(const std::string& key) {
  use(key);
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
    use(key);
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
    if (!used_.count(it.key())) fail_unknown(it.key());
  }
}

}  // namespace ts::json_input
