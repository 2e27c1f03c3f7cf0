#pragma once
// Host <-> device copies of pageable memory through two pinned staging buffers. A std::vector's
// memory is pageable, and cudaMemcpy from it ran at about 4 GB/s host to device and 1.3 GB/s device
// to host on the H100 machine (a block24 sol_cuda upload of 3.2 GB: 0.8 s), where pinned memory
// moves at the bus's rate (542 MB in 0.010 s). Each 64 MB chunk is copied between the caller's
// memory and a staging buffer by several host threads while the other buffer's chunk crosses the
// bus. Small copies (under one chunk) go straight through cudaMemcpy.
#include <cuda_runtime.h>

#include <cstddef>

namespace ts::cuda {

cudaError_t copy_to_device(void* dst, const void* src, size_t bytes);
cudaError_t copy_to_host(void* dst, const void* src, size_t bytes);

}  // namespace ts::cuda
