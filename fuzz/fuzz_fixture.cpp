// The fixture loader on arbitrary bytes as an HDF5 file: validation with
// /block (what `touchstone fixture validate` and `reference` run first) must
// end in a summary or an InputError. HDF5 opens files by name, so each input
// is written to one scratch file per process (in /dev/shm when it exists).
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/error.hpp"
#include "fixtures/fixture.hpp"

namespace {
struct Scratch {
  std::string path;
  Scratch() {
    const std::filesystem::path dir =
        std::filesystem::is_directory("/dev/shm") ? "/dev/shm" : std::filesystem::temp_directory_path();
    path = (dir / ("ts_fuzz_fixture_" + std::to_string(::getpid()) + ".h5")).string();
  }
  ~Scratch() { std::remove(path.c_str()); }
};
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const Scratch scratch;
  const std::string& path = scratch.path;
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  try {
    ts::LoadOptions opts;
    opts.load_block = true;
    (void)ts::validate_fixture(path, opts);
  } catch (const ts::InputError&) {
  }
  return 0;
}
