#include "report/markup.hpp"

namespace ts {

std::string markup_escape(const std::string& s) {
  std::string o;
  o.reserve(s.size());
  for (unsigned char ch : s) {
    switch (ch) {
      case '&': o += "&amp;"; break;
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '"': o += "&quot;"; break;
      case '\'': o += "&#39;"; break;
      default:
        if (ch < 0x20 && ch != '\t' && ch != '\n' && ch != '\r') o += ' ';
        else o += static_cast<char>(ch);
    }
  }
  return o;
}

}  // namespace ts
