// The report importer: any input is a MeasurementsFile or an InputError, and
// what it imports must load as a touchstone.measurements/1 file (what
// `import-report -o` writes, `gate -m` must read).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "core/error.hpp"
#include "gates/import_report.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  ts::MeasurementsFile m;
  try {
    m = ts::import_report(text, "fuzz.report.json");
  } catch (const ts::InputError&) {
    return 0;
  }
  const std::string written = m.to_json().dump(2);
  try {
    (void)ts::parse_measurements(written, "imported.json");
  } catch (const ts::InputError& e) {
    std::fprintf(stderr, "imported but unreadable: %s\n", e.what());
    std::abort();
  }
  return 0;
}
