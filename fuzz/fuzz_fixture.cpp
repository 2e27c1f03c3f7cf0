// The fixture loader on arbitrary bytes as an HDF5 file: validation with
// /block (what `touchstone fixture validate` and `reference` run first) must
// end in a summary or an InputError. HDF5 opens files by name, so each input
// is written to one scratch file per process (in /dev/shm when it exists).
//
// The reads run as the product runs them: first in a forked child
// (fixtures/isolated_read), which turns a libhdf5 crash or endless loop into
// an InputError. A sanitizer report in that child is a finding all the same:
// the child's death callback exits with kSanitizerExit and the fuzzer aborts
// on the InputError that names it (the report is on stderr above it).
#include <pthread.h>
#include <sanitizer/common_interface_defs.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/error.hpp"
#include "fixtures/fixture.hpp"

namespace {
constexpr int kSanitizerExit = 86;

void child_death() { ::_exit(kSanitizerExit); }
void in_child() { __sanitizer_set_death_callback(child_death); }

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

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  ::pthread_atfork(nullptr, nullptr, in_child);
  // A stuck libhdf5 is stopped well inside libFuzzer's -timeout.
  ::setenv("TOUCHSTONE_READ_STALL_S", "1", 0);
  return 0;
}

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
  } catch (const ts::InputError& e) {
    if (std::string(e.what()).find("exit status " + std::to_string(kSanitizerExit)) != std::string::npos) {
      std::fprintf(stderr, "fuzz_fixture: a sanitizer report in the isolated read: %s\n", e.what());
      std::abort();
    }
  }
  return 0;
}
