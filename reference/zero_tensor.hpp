#pragma once
// Large zero-filled host tensors and vectors whose pages are made on every core first.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/tensor.hpp"

namespace ts {

// Asks the kernel to supply the whole pages inside [p, p + bytes) now, in 64 MB slices on all cores
// (MADV_POPULATE_WRITE, Linux 5.14+), when they span 64 MB or more. One core faulting in fresh memory
// page by page took 1.2-1.4 s for block24's 2.2 GB attention output on the H200 machine (the device
// computes it in 0.8 s). Only a hint, which never changes the memory's contents: false when the range is
// too small or the kernel refused, and then the first writes make the pages as before.
bool populate_pages(void* p, size_t bytes);

// v = n value-initialised (zero) elements, its pages populated first.
template <class T>
void zero_fill(std::vector<T>& v, size_t n) {
  v.clear();
  v.reserve(n);
  populate_pages(v.data(), n * sizeof(T));
  v.resize(n);
}

// Tensor(shape, dtype), its storage made by zero_fill.
Tensor zero_tensor(std::vector<int64_t> shape, DType dtype);

}  // namespace ts
