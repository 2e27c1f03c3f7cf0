// The exact attention reference's device kernel (see attention_exact.hpp).
#include <cuda_runtime.h>

#include <string>

#include "reference/cuda/exact_kernel.hpp"

namespace ts::cuda {
namespace {

constexpr int kMaxD = kExactMaxHeadDim;
constexpr int kQueriesPerBlock = 64;
constexpr int kKeysPerTile = 8;  // K and V tiles: 2 x 8 x 256 doubles = 32 KiB of shared memory

struct DeviceBuffer {
  double* p = nullptr;
  cudaError_t err = cudaSuccess;
  explicit DeviceBuffer(size_t n) { err = cudaMalloc(&p, n * sizeof(double)); }
  ~DeviceBuffer() { cudaFree(p); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
};

// One thread per query of one head; keys and values stream through shared
// memory a tile at a time, and the running max is updated once per tile.
__global__ void exact_attention_kernel(const double* q, const double* k, const double* v,
                                       double* out, long long S, long long H, int D,
                                       double scale) {
  __shared__ double ks[kKeysPerTile][kMaxD];
  __shared__ double vs[kKeysPerTile][kMaxD];
  const long long h = blockIdx.y;
  const long long i = static_cast<long long>(blockIdx.x) * kQueriesPerBlock + threadIdx.x;
  const bool active = i < S;
  double qi[kMaxD], acc[kMaxD];
  for (int d = 0; d < D; ++d) {
    qi[d] = active ? q[(i * H + h) * D + d] : 0.0;
    acc[d] = 0.0;
  }
  double m = -INFINITY, l = 0.0;
  for (long long j0 = 0; j0 < S; j0 += kKeysPerTile) {
    const int nk = static_cast<int>(min(static_cast<long long>(kKeysPerTile), S - j0));
    __syncthreads();
    for (int e = threadIdx.x; e < nk * D; e += blockDim.x) {
      const int jj = e / D, d = e % D;
      ks[jj][d] = k[((j0 + jj) * H + h) * D + d];
      vs[jj][d] = v[((j0 + jj) * H + h) * D + d];
    }
    __syncthreads();
    if (!active) continue;
    double s[kKeysPerTile];
    double tile_max = -INFINITY;
    for (int jj = 0; jj < nk; ++jj) {
      double dot = 0.0;
      for (int d = 0; d < D; ++d) dot += qi[d] * ks[jj][d];
      s[jj] = dot * scale;
      tile_max = fmax(tile_max, s[jj]);
    }
    const double m_new = fmax(m, tile_max);
    const double corr = exp(m - m_new);  // 0 on the first tile
    l *= corr;
    for (int d = 0; d < D; ++d) acc[d] *= corr;
    for (int jj = 0; jj < nk; ++jj) {
      const double p = exp(s[jj] - m_new);
      l += p;
      for (int d = 0; d < D; ++d) acc[d] += p * vs[jj][d];
    }
    m = m_new;
  }
  if (active)
    for (int d = 0; d < D; ++d) out[(i * H + h) * D + d] = acc[d] / l;
}

}  // namespace

bool device_available(std::string* why) {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess || n == 0) {
    if (why) *why = e != cudaSuccess ? cudaGetErrorString(e) : "no CUDA device";
    cudaGetLastError();  // clear the error for later calls
    return false;
  }
  return true;
}

std::string exact_attention_fp64(const double* q, const double* k, const double* v, double* out,
                                 long long S, long long H, int D, double scale) {
  const size_t n = static_cast<size_t>(S * H * D);
  DeviceBuffer dq(n), dk(n), dv(n), dout(n);
  for (const DeviceBuffer* b : {&dq, &dk, &dv, &dout})
    if (b->err != cudaSuccess) return std::string("cudaMalloc: ") + cudaGetErrorString(b->err);
  auto fail = [](const char* what, cudaError_t e) {
    return std::string(what) + ": " + cudaGetErrorString(e);
  };
  cudaError_t e;
  if ((e = cudaMemcpy(dq.p, q, n * 8, cudaMemcpyHostToDevice)) != cudaSuccess) return fail("copy q", e);
  if ((e = cudaMemcpy(dk.p, k, n * 8, cudaMemcpyHostToDevice)) != cudaSuccess) return fail("copy k", e);
  if ((e = cudaMemcpy(dv.p, v, n * 8, cudaMemcpyHostToDevice)) != cudaSuccess) return fail("copy v", e);
  // Poison the output so a kernel that writes nothing cannot pass.
  if ((e = cudaMemset(dout.p, 0xFF, n * 8)) != cudaSuccess) return fail("poison output", e);
  const dim3 grid(static_cast<unsigned>((S + kQueriesPerBlock - 1) / kQueriesPerBlock),
                  static_cast<unsigned>(H));
  exact_attention_kernel<<<grid, kQueriesPerBlock>>>(dq.p, dk.p, dv.p, dout.p, S, H, D, scale);
  if ((e = cudaGetLastError()) != cudaSuccess) return fail("launch", e);
  if ((e = cudaDeviceSynchronize()) != cudaSuccess) return fail("kernel", e);
  if ((e = cudaMemcpy(out, dout.p, n * 8, cudaMemcpyDeviceToHost)) != cudaSuccess) return fail("copy out", e);
  return {};
}

}  // namespace ts::cuda
