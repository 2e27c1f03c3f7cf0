#pragma once
// The writers of `touchstone scan` (drivers/scan.hpp runs it; its JSON is ScanResult::to_json).
#include <string>

#include "drivers/scan.hpp"

namespace ts {

std::string scan_text(const ScanResult& r);  // the terminal table and the cliff's line
std::string scan_html(const ScanResult& r);  // the curve, the cliff shaded, the table

}  // namespace ts
