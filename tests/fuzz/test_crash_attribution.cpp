// The fuzzer's rule for whose defect a dying stack is (fuzz/crash_attribution)
// on real addresses: libhdf5's and zlib's functions as this process has them
// loaded, its own code, and the C runtime's (or the sanitizer's) memcpy.
#include <dlfcn.h>
#include <hdf5.h>

#include <cstdio>
#include <string>
#include <vector>

#include "catch.hpp"
#include "crash_attribution.hpp"

namespace {

[[gnu::noinline]] int own_function(int x) { return x * 3 + 1; }

void* inside(void* fn) { return static_cast<char*>(fn) + 4; }
void* symbol(const char* name) {
  void* p = ::dlsym(RTLD_DEFAULT, name);
  REQUIRE(p != nullptr);
  return inside(p);
}
void* own() { return inside(reinterpret_cast<void*>(&own_function)); }

std::string frame(int i, void* pc, const char* rest) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "    #%d %p", i, pc);
  return buf + std::string(rest) + "\n";
}

}  // namespace

TEST_CASE("a stack that reaches libhdf5 before touchstone's code is the library's") {
  REQUIRE(H5open() >= 0);
  void* hdf5 = symbol("H5Fopen");
  void* zlib = symbol("inflate");
  void* copy = symbol("memcpy");
  using ts::fuzz::library_fault;
  CHECK(library_fault({copy, hdf5, own()}));
  // zlib decoding a chunk for libhdf5: charged to libhdf5, which called it.
  CHECK(library_fault({copy, zlib, hdf5, own()}));
  CHECK_FALSE(library_fault({copy, own(), hdf5}));
  CHECK_FALSE(library_fault({copy, zlib, own(), hdf5}));
  CHECK_FALSE(library_fault({own()}));
  CHECK_FALSE(library_fault({copy, zlib}));  // never reaches libhdf5
  CHECK_FALSE(library_fault({}));
  CHECK_FALSE(library_fault({nullptr, own()}));
}

TEST_CASE("a report's first stack is read whatever the symbolizer printed") {
  void* hdf5 = symbol("H5Fopen");
  void* copy = symbol("memcpy");
  // With debug symbols, frames name source files, not the library.
  const std::string symbolised = "==1==ERROR: AddressSanitizer: heap-buffer-overflow on address 0x1\n" +
                                 frame(0, copy, " in __asan_memcpy") +
                                 frame(1, hdf5, " in H5HG_read ./src/H5HG.c:512:5") +
                                 frame(2, own(), " in ts::h5::attr_json fixtures/h5_detail.cpp:284") +
                                 "\n0x1 is located 0 bytes to the right of 16-byte region\nallocated by thread T0 here:\n" +
                                 frame(0, own(), " in malloc");
  auto stack = ts::fuzz::report_stack(symbolised.c_str());
  REQUIRE(stack.size() == 3);
  CHECK(stack[1] == hdf5);
  CHECK(ts::fuzz::library_fault(stack));

  // touchstone's frame first: its fault, whatever the allocation stack says.
  const std::string own_first = "READ of size 8\n" + frame(0, copy, " (/x/fuzz_fixture+0x10)") +
                                frame(1, own(), " (/x/fuzz_fixture+0x20)") + "\nfreed by thread T0 here:\n" +
                                frame(0, hdf5, " (/lib/x86_64-linux-gnu/libhdf5_serial.so.103+0x30)");
  CHECK_FALSE(ts::fuzz::library_fault(ts::fuzz::report_stack(own_first.c_str())));
  CHECK(ts::fuzz::report_stack("#x 0x1\n#12\n# 0x2\n").empty());
  CHECK(ts::fuzz::report_stack(nullptr).empty());
}
