// The measurements reader: any input is a MeasurementsFile or an InputError.
// An accepted file is also judged against a built-in gate, as `gate -m` does.
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/error.hpp"
#include "gates/gate_file.hpp"
#include "gates/measurements.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const ts::MeasurementsFile m = ts::parse_measurements(text, "fuzz.measurements.json");
    (void)m.to_json().dump();
    static const ts::GateFile gate = ts::load_gate("sparse_acceptance");
    const std::string base = ts::resolve_measured_baseline(m, gate.baseline);
    for (const auto& b : m.backends())
      if (b != base) (void)ts::evidence_from_measurements(m, gate, base, b, 1);
  } catch (const ts::InputError&) {
  }
  return 0;
}
