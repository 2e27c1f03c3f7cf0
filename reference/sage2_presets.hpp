#pragma once
// The sage2 presets: what sageattn() of SageAttention 2.2.0 dispatches to on
// each GPU architecture (docs/emulation.md). This is the one list of preset
// names in the C++ sources: the factory, --help texts, error messages and
// every default baseline read it (tests/reference/test_sage2_presets.cpp
// fails when a preset name is written anywhere else).
#include <string>
#include <vector>

#include "reference/attention_sage2.hpp"

namespace ts {

struct Sage2Preset {
  const char* name;
  const char* kernel;  // which SageAttention kernel, for --help and docs
  Sage2Config config;  // config.preset == name
  // The SageAttention 2.2.0 function sageattn() calls for this preset, and the
  // multiple it pads V's tokens to before per_channel_fp8: what Python's
  // replay calls as the real kernel (python/touchstone/sage.py) and how it
  // reads back its V codes.
  const char* real_function;
  int real_v_pad;
};

// In the table's order; the first one is the default preset.
const std::vector<Sage2Preset>& sage2_presets();
const Sage2Preset& sage2_default_preset();
// "<first><sep><second>..." for --help texts and error messages.
std::string sage2_preset_names(const std::string& sep);
// "sage2:preset=<default>": the baseline a run uses when none is named.
std::string sage2_default_spec();

}  // namespace ts
