#pragma once
// The tables other languages read instead of copying them (README.md,
// "Tables, not copies"): the block's stages, the sage2 presets, the fixture
// size presets, the timing defaults, the built-in gates, the metric names,
// /config's required keys and defaults, the fixture format's digest, element
// types and attribute names, sol's routing format and block geometry, the
// mistrust ceiling, the version. `touchstone tables
// --json` prints them; the Python extension returns them; Python's fallback
// file python/touchstone/tables.json is this output, checked equal by
// tests/python/test_tables.py.
#include <nlohmann/json.hpp>

namespace ts {

nlohmann::json export_tables();

}  // namespace ts
