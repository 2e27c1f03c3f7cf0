#pragma once
// The reports' HTML page: one stylesheet, head and footer for every page touchstone writes.
#include <string>

namespace ts {

// A page of its own (triage, scan, history) in the reports' style: the same
// stylesheet (every svg_plot.hpp class), head and footer around `body_html`.
std::string render_page(const std::string& title, const std::string& body_html);

}  // namespace ts
