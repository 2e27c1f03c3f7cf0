#pragma once
// Large zero-filled host tensors and vectors whose pages are made on every core first.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/pages.hpp"
#include "core/tensor.hpp"

namespace ts {


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
