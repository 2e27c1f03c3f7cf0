// The fixture loader on arbitrary bytes as an HDF5 file: validation with
// /block (what `touchstone fixture validate` and `reference` run first) must
// end in a summary or an InputError. HDF5 opens files by name, so each input
// is written to one scratch file per process (in /dev/shm when it exists).
//
// The reads run as the product runs them: first in a forked child
// (fixtures/isolated_read), which turns a libhdf5 crash or endless loop into
// an InputError. A sanitizer report in that child about touchstone's own
// code is a finding all the same: the child's death callback exits with
// kSanitizerExit and the fuzzer aborts on the InputError that names it (the
// report is on stderr above it). A report whose first frame outside the
// sanitizer runtime is in libhdf5 (ASan's memcpy checks see the library's
// own overlapping copies on corrupt heaps) is the library's defect that the
// child exists for: that child dies like a crashed one.
#include <pthread.h>
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#include <signal.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "core/error.hpp"
#include "fixtures/fixture.hpp"

namespace {
constexpr int kSanitizerExit = 86;

bool g_library_fault = false;

// The first stack frame of an ASan report that is not the runtime's own
// (interceptors, memcpy and friends) decides whose defect it is.
void classify_report(const char* report) {
  std::istringstream lines(report);
  std::string line;
  while (std::getline(lines, line)) {
    const size_t hash = line.find_first_not_of(' ');
    if (hash == std::string::npos || line[hash] != '#' || line.find(" in ") == std::string::npos) continue;
    bool runtime = false;
    for (const char* r : {"__interceptor", "__asan", "__sanitizer", "malloc", "calloc", "realloc", "free",
                          "operator new", "memcpy", "memmove", "memset", "strlen",
                          "strnlen", "strcpy", "strncpy", "strcmp", "strncmp"})
      runtime = runtime || line.find(r) != std::string::npos;
    if (runtime) continue;
    g_library_fault = line.find("libhdf5") != std::string::npos;
    return;
  }
}

void child_death() {
  if (g_library_fault) {
    ::signal(SIGSEGV, SIG_DFL);
    ::raise(SIGSEGV);
  }
  ::_exit(kSanitizerExit);
}
void in_child() {
  __asan_set_error_report_callback(classify_report);
  __sanitizer_set_death_callback(child_death);
}

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
