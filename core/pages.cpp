#include "core/pages.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

// Older C library headers (glibc < 2.35) lack the flag that Linux 5.14+ kernels take.
#if defined(__linux__) && !defined(MADV_POPULATE_WRITE)
#define MADV_POPULATE_WRITE 23
#endif

namespace ts {

bool populate_pages(void* p, size_t bytes) {
#ifdef MADV_POPULATE_WRITE
  static const uintptr_t page = [] {
    const long s = sysconf(_SC_PAGESIZE);  // 64 KB on some aarch64 kernels
    return static_cast<uintptr_t>(s > 0 ? s : 4096);
  }();
  constexpr uintptr_t kSlice = uintptr_t{64} << 20;
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(p) + page - 1) & ~(page - 1);
  const uintptr_t end = (reinterpret_cast<uintptr_t>(p) + bytes) & ~(page - 1);
  if (p == nullptr || end < begin + kSlice) return false;
  // Transparent huge pages where the kernel makes them on request ("madvise" mode): 2 MB pages,
  // 512 times fewer faults to take. A hint like the one below; refused, the pages are 4 KB.
#ifdef MADV_HUGEPAGE
  madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
#endif
  const size_t slices = static_cast<size_t>((end - begin + kSlice - 1) / kSlice);
  std::atomic<size_t> next{0};
  std::atomic<bool> refused{false};
  auto work = [&] {
    for (size_t i; (i = next++) < slices;) {
      const uintptr_t a = begin + i * kSlice, b = std::min(a + kSlice, end);
      if (madvise(reinterpret_cast<void*>(a), b - a, MADV_POPULATE_WRITE) != 0) refused = true;
    }
  };
  const size_t threads = std::min<size_t>(slices, std::max(1u, std::thread::hardware_concurrency()));
  std::vector<std::thread> pool;
  for (size_t t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
  return !refused;
#else
  (void)p;
  (void)bytes;
  return false;
#endif
}

}  // namespace ts
