#pragma once
// Host <-> device copies of pageable memory through two pinned staging buffers. A std::vector's
// memory is pageable, and cudaMemcpy from it ran at about 4 GB/s host to device and 1.3 GB/s device
// to host on the H100 machine (a block24 sol_cuda upload of 3.2 GB: 0.8 s), where pinned memory
// moves at the bus's rate (542 MB in 0.010 s). Each 64 MB chunk is copied between the caller's
// memory and a staging buffer by several host threads while the other buffer's chunk crosses the
// bus. Small copies (under one chunk) go straight through cudaMemcpy.
#include <cuda_runtime.h>

#include <cstddef>

#include "reference/cuda/stored_input.hpp"

namespace ts::cuda {

// Where the bytes of one contiguous device range come from: pieces of host memory, ascending by
// offset, covering [0, total) without gaps (a fixture dataset's chunks where the file's mapping holds them).
struct HostPiece {
  size_t offset = 0, bytes = 0;
  const void* src = nullptr;
};

cudaError_t copy_to_device(void* dst, const void* src, size_t bytes);
// The pieces, gathered into the staging buffers, into dst[0, total).
cudaError_t copy_pieces_to_device(void* dst, const HostPiece* pieces, size_t n_pieces, size_t total);
// An input's elements as stored, into dst (room for all of them at their stored size).
cudaError_t copy_input_to_device(void* dst, const StoredInput& in);
// Bytes per element of a StoredInput type.
inline size_t stored_input_bytes(int type) { return type == 2 ? 4 : 2; }
cudaError_t copy_to_host(void* dst, const void* src, size_t bytes);

}  // namespace ts::cuda
