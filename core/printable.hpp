#pragma once
// Text from outside (file names, dataset names, attribute values) goes into
// one-line error messages: control characters and bytes that are not valid
// UTF-8 are written as \xNN so a message stays one line of valid UTF-8.
#include <string>
#include <string_view>

namespace ts {

inline std::string printable(std::string_view s) {
  static const char* hex = "0123456789abcdef";
  std::string out;
  out.reserve(s.size());
  auto escape = [&](unsigned char c) {
    out += "\\x";
    out += hex[c >> 4];
    out += hex[c & 15];
  };
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c == 0x7f) {
      escape(c);
      ++i;
      continue;
    }
    if (c < 0x80) {
      out += static_cast<char>(c);
      ++i;
      continue;
    }
    // Length and lowest code point of a well-formed sequence (no overlongs,
    // no surrogates, nothing above U+10FFFF).
    size_t n = 0;
    unsigned cp = 0, min = 0;
    if ((c & 0xe0) == 0xc0) n = 2, cp = c & 0x1f, min = 0x80;
    else if ((c & 0xf0) == 0xe0) n = 3, cp = c & 0x0f, min = 0x800;
    else if ((c & 0xf8) == 0xf0) n = 4, cp = c & 0x07, min = 0x10000;
    bool ok = n > 0 && i + n <= s.size();
    for (size_t k = 1; ok && k < n; ++k) {
      const auto cc = static_cast<unsigned char>(s[i + k]);
      ok = (cc & 0xc0) == 0x80;
      cp = (cp << 6) | (cc & 0x3f);
    }
    ok = ok && cp >= min && cp <= 0x10ffff && !(cp >= 0xd800 && cp <= 0xdfff);
    if (!ok) {
      escape(c);
      ++i;
      continue;
    }
    out.append(s.substr(i, n));
    i += n;
  }
  return out;
}

}  // namespace ts
