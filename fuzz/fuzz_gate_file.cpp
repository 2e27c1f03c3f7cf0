// The gate-file parser: any input is a GateFile or an InputError. Anything
// else (another exception, a crash, a sanitizer report) is a finding.
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/error.hpp"
#include "gates/gate_file.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const ts::GateFile g = ts::parse_gate(text, "fuzz.gate.json");
    // What was accepted must print and parse again as the same gate.
    const std::string again = g.to_json().dump();
    (void)ts::parse_gate(again, "fuzz.gate.json (printed)").to_json().dump();
    for (const auto& r : g.rules) (void)r.bound_text();
  } catch (const ts::InputError&) {
  }
  return 0;
}
