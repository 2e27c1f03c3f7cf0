#pragma once
// Large zero-filled host tensors whose pages are made on every core first.
#include <cstdint>
#include <vector>

#include "core/tensor.hpp"

namespace ts {

// Tensor(shape, dtype), but for a tensor of 64 MB or more the kernel first supplies its pages in 64 MB slices
// on all cores (MADV_POPULATE_WRITE, Linux 5.14+); the zero fill then runs over memory that is already
// there. One core faulting in a fresh tensor 4 KB at a time took 1.2-1.4 s for block24's 2.2 GB attention
// output on the H200 machine (the device computes it in 0.8 s). Where the call is missing or refused, the
// fill makes the pages itself, as Tensor's constructor does.
Tensor zero_tensor(std::vector<int64_t> shape, DType dtype);

}  // namespace ts
