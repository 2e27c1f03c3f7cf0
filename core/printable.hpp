#pragma once
// Text from a user's file (a JSON key, a path, a parser's "last read") made
// safe to echo in a one-line error: valid UTF-8 is kept, anything else (a
// stray byte, a control character, a newline) becomes a visible escape, so
// a message never breaks the terminal or the one-line contract.
#include <string>

namespace ts {

inline std::string printable(const std::string& s) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  out.reserve(s.size());
  auto esc = [&](unsigned char c) {
    out += "\\x";
    out += hex[c >> 4];
    out += hex[c & 15];
  };
  const size_t n = s.size();
  for (size_t i = 0; i < n;) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      if (c == '\n') out += "\\n";
      else if (c == '\r') out += "\\r";
      else if (c == '\t') out += "\\t";
      else if (c < 0x20 || c == 0x7F) esc(c);
      else out += static_cast<char>(c);
      ++i;
      continue;
    }
    // A well-formed multi-byte sequence (no overlongs, surrogates or code
    // points past U+10FFFF) is copied whole; any other byte is escaped alone.
    size_t len = 0;
    unsigned lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) len = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
      len = 3;
      if (c == 0xE0) lo = 0xA0;
      if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      len = 4;
      if (c == 0xF0) lo = 0x90;
      if (c == 0xF4) hi = 0x8F;
    }
    bool ok = len > 0 && i + len <= n;
    for (size_t k = 1; ok && k < len; ++k) {
      const auto d = static_cast<unsigned char>(s[i + k]);
      const unsigned l = k == 1 ? lo : 0x80, h = k == 1 ? hi : 0xBF;
      ok = d >= l && d <= h;
    }
    if (ok) {
      out.append(s, i, len);
      i += len;
    } else {
      esc(c);
      ++i;
    }
  }
  return out;
}

}  // namespace ts
