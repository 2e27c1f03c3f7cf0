#pragma once
// The writers of `touchstone scan` (drivers/scan.hpp runs it).
#include <nlohmann/json.hpp>
#include <string>

#include "drivers/scan.hpp"

namespace ts {

std::string scan_text(const ScanResult& r);  // the terminal table and the cliff's line
std::string scan_html(const ScanResult& r);  // the curve, the cliff shaded, the table
nlohmann::json scan_json(const ScanResult& r);  // schema touchstone.scan/1: options, every evaluation, the cliff

}  // namespace ts
