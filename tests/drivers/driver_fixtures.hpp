#pragma once
// Fixtures the driver tests share, synthesised in-process into a scratch
// folder removed at exit.
#include <unistd.h>

#include <filesystem>
#include <string>

#include "fixtures/fixture.hpp"
#include "fixtures/synth.hpp"
#include "fixtures/block/synth_block.hpp"

namespace ts::test {

inline const std::string& driver_scratch() {
  struct Dir {
    std::string path;
    Dir() {
      auto d = std::filesystem::temp_directory_path() / ("ts_driver_tests_" + std::to_string(::getpid()));
      std::filesystem::remove_all(d);
      std::filesystem::create_directories(d);
      path = d.string();
    }
    ~Dir() {
      std::error_code ec;
      std::filesystem::remove_all(path, ec);
    }
  };
  static const Dir dir;
  return dir.path;
}

// A fresh copy of a synthetic fixture (preset, with or without /block).
inline std::string synth_fixture(const std::string& name, const std::string& preset, bool block) {
  const std::string p = driver_scratch() + "/" + name + ".h5";
  SynthOptions so;
  so.preset = preset;
  so.seed = 3;
  SynthResult r = synthesize(so);
  if (block) synthesize_block(so, r);
  write_synthetic(r, p, {});
  return p;
}

}  // namespace ts::test
