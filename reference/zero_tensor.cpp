#include "reference/zero_tensor.hpp"

#include <utility>

namespace ts {

Tensor zero_tensor(std::vector<int64_t> shape, DType dtype) {
  Tensor t;
  t.shape = std::move(shape);
  t.dtype = dtype;
  zero_fill(t.data, static_cast<size_t>(t.numel()));
  return t;
}

}  // namespace ts
