#pragma once
// Fresh memory made resident on every core before it is written.
#include <cstddef>

namespace ts {

// Asks the kernel to supply the whole pages inside [p, p + bytes) now, in 64 MB slices on all cores
// (MADV_POPULATE_WRITE, Linux 5.14+), when they span 64 MB or more. One core faulting in fresh memory
// page by page took 1.2-1.4 s for block24's 2.2 GB attention output on the H200 machine (the device
// computes it in 0.8 s), and as long for each input made float64 on load. Only a hint, which never
// changes the memory's contents: false when the range is too small or the kernel refused, and then the
// first writes make the pages as before. Threads, not OpenMP: core links no OpenMP, and a forked
// reader child may call it.
bool populate_pages(void* p, size_t bytes);

}  // namespace ts
