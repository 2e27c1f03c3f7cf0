#pragma once
// Tensor-core and cp.async building blocks shared by the fused device kernels
// (exact_flash.cu, sage2_tc.cu). Compute capability 9.0+ where noted: callers
// compile them only inside their own architecture guard.
#include <cuda_runtime.h>

#include <string>

namespace ts::cuda::tc {

// Why this device cannot run a kernel built on dmma() that needs `smem_bytes`
// of shared memory per block and one block per head ("" when it can).
inline std::string dmma_kernel_unsupported(long long H, size_t smem_bytes) {
  if (H > 65535) return "more than 65535 heads";
  int dev = 0, major = 0, optin = 0;
  cudaError_t e = cudaGetDevice(&dev);
  if (e == cudaSuccess) e = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev);
  if (e == cudaSuccess) e = cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev);
  if (e != cudaSuccess) {
    cudaGetLastError();
    return std::string("device query failed: ") + cudaGetErrorString(e);
  }
  if (major < 9)
    return "compute capability " + std::to_string(major) +
           ".x lacks the m16n8k16 float64 tensor-core shape (compute capability 9.0+)";
  if (static_cast<size_t>(optin) < smem_bytes)
    return "needs " + std::to_string(smem_bytes) + " bytes of shared memory per block, the device has " +
           std::to_string(optin);
  return {};
}

// 16 bytes global -> shared, asynchronously; src-size 0 writes zeros, so rows
// past the sequence end are zero, never garbage (0 · NaN).
__device__ __forceinline__ void cp_async16(void* dst, const void* src, bool valid) {
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(src), "r"(valid ? 16 : 0)
               : "memory");
}
// 8 bytes, for tiles whose layout interleaves rows element by element (cp.async.ca: .cg takes 16 bytes only).
__device__ __forceinline__ void cp_async8(void* dst, const void* src, bool valid) {
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.ca.shared.global [%0], [%1], 8, %2;\n" ::"r"(s), "l"(src), "r"(valid ? 8 : 0) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
__device__ __forceinline__ void cp_async_wait_all_but_one() { asm volatile("cp.async.wait_group 1;\n" ::: "memory"); }
__device__ __forceinline__ void cp_async_wait_all() { asm volatile("cp.async.wait_group 0;\n" ::: "memory"); }

// c (16 x 8) += a (16 x 16) b (16 x 8) on the float64 tensor cores, the compute capability 9.0 shape (the
// compute capability 8.0 m8n8k4 runs at about a third of the H200's float64 tensor rate). Fragments
// (lane = 4 g + c): a[v] = A[g + 8 (v & 1)][c + 4 (v >> 1)], b[v] = B[c + 4 v][g],
// d[v] = D[g + 8 (v >> 1)][2 c + (v & 1)].
__device__ __forceinline__ void dmma(double (&d)[4], const double (&a)[8], const double (&b)[4]) {
  asm("mma.sync.aligned.m16n8k16.row.col.f64.f64.f64.f64 {%0, %1, %2, %3}, {%4, %5, %6, %7, %8, %9, %10, %11}, "
      "{%12, %13, %14, %15}, {%0, %1, %2, %3};\n"
      : "+d"(d[0]), "+d"(d[1]), "+d"(d[2]), "+d"(d[3])
      : "d"(a[0]), "d"(a[1]), "d"(a[2]), "d"(a[3]), "d"(a[4]), "d"(a[5]), "d"(a[6]), "d"(a[7]), "d"(b[0]),
        "d"(b[1]), "d"(b[2]), "d"(b[3]));
}

// c (16 x 8) += a (16 x 32) b (32 x 8) in int32 on the INT8 tensor cores (compute capability 8.0+), exact:
// no saturation. Each register holds 4 consecutive k of one row (A) or column (B), lowest k in the low
// byte (lane = 4 g + c): a = {A[g][4c..], A[g + 8][4c..], A[g][16 + 4c..], A[g + 8][16 + 4c..]},
// b = {B[4c..][g], B[16 + 4c..][g]}, d[v] = D[g + 8 (v >> 1)][2 c + (v & 1)].
__device__ __forceinline__ void imma(int (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
  asm("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// Swizzles of float64 tiles read as mma fragments (no padding, no bank conflicts):
// [row][width] tiles read as 8 rows x 4 columns XOR each row's 4-column groups by row & 7;
// [key][D] tiles read as 4 keys x 8 columns XOR by key & 3.
__device__ __forceinline__ int swz_rows(int row, int col) { return col ^ ((row & 7) << 2); }
__device__ __forceinline__ int swz_keys(int row, int col) { return col ^ ((row & 3) << 2); }

// The A fragment of rows [row0, row0 + 16) and columns [col0, col0 + 16) of a swz_rows tile.
__device__ __forceinline__ void load_a(double (&a)[8], const double* tile, int width, int row0, int col0, int g,
                                       int c) {
#pragma unroll
  for (int v = 0; v < 8; ++v) {
    const int r = row0 + g + 8 * (v & 1);
    a[v] = tile[r * width + swz_rows(r, col0 + c + 4 * (v >> 1))];
  }
}

}  // namespace ts::cuda::tc
