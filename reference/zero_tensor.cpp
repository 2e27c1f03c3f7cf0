#include "reference/zero_tensor.hpp"

#include <sys/mman.h>

#include <utility>

namespace ts {

void populate_pages(void* p, size_t bytes) {
#ifdef MADV_POPULATE_WRITE
  constexpr uintptr_t kPage = 4096, kSlice = uintptr_t{64} << 20;
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(p) + kPage - 1) & ~(kPage - 1);
  const uintptr_t end = (reinterpret_cast<uintptr_t>(p) + bytes) & ~(kPage - 1);
  if (p == nullptr || end < begin + kSlice) return;
  const int64_t slices = static_cast<int64_t>((end - begin + kSlice - 1) / kSlice);
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t i = 0; i < slices; ++i) {
    const uintptr_t a = begin + static_cast<uintptr_t>(i) * kSlice, b = a + kSlice < end ? a + kSlice : end;
    (void)madvise(reinterpret_cast<void*>(a), b - a, MADV_POPULATE_WRITE);
  }
#else
  (void)p;
  (void)bytes;
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
