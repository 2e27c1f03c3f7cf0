#pragma once
// Whose defect killed a fuzz_fixture process: touchstone's, or libhdf5's on
// a corrupt file (what the product's isolated read exists for). Decided from
// the addresses of the dying stack, not from their printed names: a machine
// with debug symbols prints "H5HG_read ./src/H5HG.c:512" without the
// library's file name, one without a symbolizer prints bare offsets.
//
// The rule, from the innermost frame out: frames of the C and C++ runtimes
// and of the sanitizer runtime (its exported interceptors in the executable)
// are skipped; a frame in libhdf5 makes it the library's fault; a frame in
// touchstone's own code (the executable) makes it touchstone's; frames in
// other shared objects (zlib, libaec, filter plugins: what libhdf5 calls to
// decode chunks) are skipped, so a fault in them is charged to whoever
// called them. A stack that never reaches libhdf5 is touchstone's.
//
// A buffer touchstone sizes wrongly and hands to libhdf5 is charged to the
// library by this rule; the fixture tests (tests/fixtures) check the sizes.
#include <cstddef>
#include <vector>

namespace ts::fuzz {

// The first stack of a sanitizer report ("#0 0x… in …" lines), in order.
std::vector<void*> report_stack(const char* report);
// Allocates nothing: it runs in a fatal signal's handler, where the heap may
// be what libhdf5 damaged.
bool library_fault(void* const* pcs, size_t n);
inline bool library_fault(const std::vector<void*>& pcs) { return library_fault(pcs.data(), pcs.size()); }

}  // namespace ts::fuzz
