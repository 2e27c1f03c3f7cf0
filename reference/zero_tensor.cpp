#include "reference/zero_tensor.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <utility>

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
  const int64_t slices = static_cast<int64_t>((end - begin + kSlice - 1) / kSlice);
  int refused = 0;
#pragma omp parallel for schedule(dynamic, 1) reduction(| : refused)
  for (int64_t i = 0; i < slices; ++i) {
    const uintptr_t a = begin + static_cast<uintptr_t>(i) * kSlice, b = a + kSlice < end ? a + kSlice : end;
    refused |= madvise(reinterpret_cast<void*>(a), b - a, MADV_POPULATE_WRITE) != 0;
  }
  return refused == 0;
#else
  (void)p;
  (void)bytes;
  return false;
#endif
}

Tensor zero_tensor(std::vector<int64_t> shape, DType dtype) {
  Tensor t;
  t.shape = std::move(shape);
  t.dtype = dtype;
  zero_fill(t.data, static_cast<size_t>(t.numel()));
  return t;
}

}  // namespace ts
