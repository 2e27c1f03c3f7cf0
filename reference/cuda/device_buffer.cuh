#pragma once
// What the .cu files share: an owning device allocation whose failure is kept,
// not thrown (nvcc-side code reports errors as strings, see exact_kernel.hpp),
// the text of a failed CUDA call, and the host clock their timings use.
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <string>

namespace ts::cuda {

template <class T>
struct DeviceBuffer {
  T* p = nullptr;
  cudaError_t err = cudaSuccess;
  explicit DeviceBuffer(size_t n) { err = cudaMalloc(&p, std::max<size_t>(n, 1) * sizeof(T)); }
  ~DeviceBuffer() { cudaFree(p); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
};

using Clock = std::chrono::steady_clock;
inline double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

inline std::string cuda_failure(const char* what, cudaError_t e) {
  return std::string(what) + ": " + cudaGetErrorString(e);
}

}  // namespace ts::cuda
