#include "core/decimal_text.hpp"

#include <charconv>

namespace ts {

std::string shortest_decimal(double v) {
  // to_chars without a precision is the shortest round trip, fixed or scientific, whichever is
  // shorter: -100 where "%.*g" at its fewest digits gave -1e+02.
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

}  // namespace ts
