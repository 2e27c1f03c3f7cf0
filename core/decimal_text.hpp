#pragma once
// A number as a person writes it: the shortest decimal that reads back as the same double
// (-100, 1.3, 1e-07), for parameters that travel as text (backend specs, repro lines, tables),
// so that text, JSON and pages show one spelling and it names the value that was run.
#include <string>

namespace ts {

std::string shortest_decimal(double v);

}  // namespace ts
