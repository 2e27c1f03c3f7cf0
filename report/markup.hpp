#pragma once
// Text for HTML and XML reports (HTML page, SVG plots, JUnit).
#include <string>

namespace ts {

// Escapes & < > " ' for element text and attribute values alike; control
// characters other than tab, newline and carriage return become spaces (XML
// 1.0 forbids them even escaped, and HTML shows nothing for them).
std::string markup_escape(const std::string& s);

}  // namespace ts
