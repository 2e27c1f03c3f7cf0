// The device block's linears (block_kernel.hpp), each output element summed
// in the host's order (reference/block_linear.cpp, numerics/nvfp4.cpp):
//   bf16 : lane l of 8 takes k = l, l + 8, ... (k mod 8, also for the tail),
//          products and sums rounded separately (-fmad=false), lanes combined
//          ((0+1)+(2+3))+((4+5)+(6+7)): the host's bits.
//   nvfp4: each 16-block partial is exact in float32 (at most 20 significant
//          bits, see nvfp4.cpp), so it may use fused multiply-adds in any
//          order; the partials enter the float32 accumulator in block order,
//          as on the host: the host's bits.
//   fp64 : cuBLAS DGEMM (another order; within rounding of the host's).
// The tiles are a plain shared-memory SGEMM: BM x BN outputs per block of 256
// threads, each thread TM x TN of them, K in steps of 16 (one NVFP4 block).
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "reference/cuda/block_kernel.hpp"
#include "reference/cuda/device_buffer.cuh"
#include "reference/numerics/convert.hpp"
#include "reference/numerics/nvfp4_block.hpp"

namespace ts::cuda::blockdev {
namespace {

constexpr int kThreads = 256;
constexpr int kBK = 16;
constexpr int kLanes = 8;

std::string launched(const char* what) {
  const cudaError_t e = cudaGetLastError();
  return e == cudaSuccess ? std::string() : cuda_failure(what, e);
}

enum class Sum { bf16_lanes, nvfp4_blocks };

template <Sum kSum, int TM, int TN>
__global__ void __launch_bounds__(kThreads) gemm_kernel(const float* __restrict__ X, const float* __restrict__ W,
                                                        long long rows, long long N, long long K, float alpha,
                                                        const float* __restrict__ bias, float* __restrict__ Y) {
  constexpr int BM = 16 * TM, BN = 16 * TN;
  __shared__ float xs[kBK][BM + 4];
  __shared__ float ws[kBK][BN + 4];
  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
  const long long i0 = static_cast<long long>(blockIdx.y) * BM, j0 = static_cast<long long>(blockIdx.x) * BN;
  constexpr int kAcc = kSum == Sum::bf16_lanes ? kLanes : 1;
  float acc[TM][TN][kAcc];
#pragma unroll
  for (int m = 0; m < TM; ++m)
#pragma unroll
    for (int n = 0; n < TN; ++n)
#pragma unroll
      for (int l = 0; l < kAcc; ++l) acc[m][n][l] = 0.0f;

  for (long long k0 = 0; k0 < K; k0 += kBK) {
    for (int e = threadIdx.x; e < BM * kBK; e += kThreads) {
      const int r = e / kBK, kk = e % kBK;
      const long long gi = i0 + r, gk = k0 + kk;
      xs[kk][r] = gi < rows && gk < K ? X[gi * K + gk] : 0.0f;
    }
    for (int e = threadIdx.x; e < BN * kBK; e += kThreads) {
      const int r = e / kBK, kk = e % kBK;
      const long long gj = j0 + r, gk = k0 + kk;
      ws[kk][r] = gj < N && gk < K ? W[gj * K + gk] : 0.0f;
    }
    __syncthreads();
    if constexpr (kSum == Sum::bf16_lanes) {
      // k0 is a multiple of 16, so lane (k0 + kk) mod 8 = kk mod 8; zero
      // padding adds +0, which leaves every accumulator as it is (none is -0).
#pragma unroll
      for (int kk = 0; kk < kBK; ++kk) {
        float a[TM], b[TN];
#pragma unroll
        for (int m = 0; m < TM; ++m) a[m] = xs[kk][ty + 16 * m];
#pragma unroll
        for (int n = 0; n < TN; ++n) b[n] = ws[kk][tx + 16 * n];
#pragma unroll
        for (int m = 0; m < TM; ++m)
#pragma unroll
          for (int n = 0; n < TN; ++n)
            acc[m][n][kk % kLanes] = __fadd_rn(acc[m][n][kk % kLanes], __fmul_rn(a[m], b[n]));
      }
    } else {
      float part[TM][TN];
#pragma unroll
      for (int m = 0; m < TM; ++m)
#pragma unroll
        for (int n = 0; n < TN; ++n) part[m][n] = 0.0f;
#pragma unroll
      for (int kk = 0; kk < kBK; ++kk) {
        float a[TM], b[TN];
#pragma unroll
        for (int m = 0; m < TM; ++m) a[m] = xs[kk][ty + 16 * m];
#pragma unroll
        for (int n = 0; n < TN; ++n) b[n] = ws[kk][tx + 16 * n];
#pragma unroll
        for (int m = 0; m < TM; ++m)
#pragma unroll
          for (int n = 0; n < TN; ++n) part[m][n] = __fmaf_rn(a[m], b[n], part[m][n]);  // exact
      }
#pragma unroll
      for (int m = 0; m < TM; ++m)
#pragma unroll
        for (int n = 0; n < TN; ++n) acc[m][n][0] = __fadd_rn(acc[m][n][0], part[m][n]);
    }
    __syncthreads();
  }

#pragma unroll
  for (int m = 0; m < TM; ++m) {
    const long long i = i0 + ty + 16 * m;
    if (i >= rows) continue;
#pragma unroll
    for (int n = 0; n < TN; ++n) {
      const long long j = j0 + tx + 16 * n;
      if (j >= N) continue;
      float y;
      if constexpr (kSum == Sum::bf16_lanes) {
        const float* l = acc[m][n];
        y = ((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7]));
      } else {
        y = acc[m][n][0] * alpha;
      }
      if (bias) y = y + bias[j];
      Y[i * N + j] = num::bf16_round(y);
    }
  }
}

template <Sum kSum, int TM, int TN>
std::string gemm(const Buffer& x, long long rows, long long K, const Buffer& w, long long N, float alpha,
                 const Buffer& b, Buffer& y) {
  constexpr int BM = 16 * TM, BN = 16 * TN;
  const dim3 grid(static_cast<unsigned>((N + BN - 1) / BN), static_cast<unsigned>((rows + BM - 1) / BM));
  gemm_kernel<kSum, TM, TN><<<grid, kThreads>>>(x.as<const float>(), w.as<const float>(), rows, N, K, alpha,
                                                b.empty() ? nullptr : b.as<const float>(), y.as<float>());
  return launched("block linear kernel");
}

__global__ void bias_kernel(double* y, long long rows, long long N, const double* b) {
  const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < rows * N) y[i] += b[i % N];
}

__global__ void amax_kernel(const float* x, long long n, unsigned* out) {
  float m = 0.0f;
  for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<long long>(gridDim.x) * blockDim.x) {
    const float a = fabsf(x[i]);
    if (a > m) m = a;  // false for NaN, as num::nvfp4_amax
  }
  for (int off = 16; off > 0; off /= 2) m = fmaxf(m, __shfl_down_sync(0xffffffffu, m, off));
  // Non-negative floats order as their bit patterns.
  if ((threadIdx.x & 31) == 0) atomicMax(out, __float_as_uint(m));
}

// One thread per (row, 16-block), the steps of num::nvfp4_quantize.
__global__ void quantize_kernel(const float* x, long long rows, long long K, long long Kp, float s_enc, float s_dec,
                                num::Nvfp4Recipe recipe, float* out) {
  const long long nb = Kp / num::kNvfp4Block;
  const long long t = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= rows * nb) return;
  const long long r = t / nb, k0 = (t % nb) * num::kNvfp4Block;
  const long long k1 = min(K, k0 + num::kNvfp4Block);
  const float* xr = x + r * K;
  float bamax = 0.0f;
  for (long long k = k0; k < k1; ++k) {
    const float a = fabsf(xr[k]);
    if (a > bamax) bamax = a;
  }
  const float sbf = num::e4m3_decode(num::nvfp4_block_scale_code(bamax, s_enc, s_dec, recipe));
  const float factor = num::nvfp4_element_factor(sbf, s_dec, recipe);
  float* o = out + r * Kp;
  for (long long k = k0; k < k0 + num::kNvfp4Block; ++k) {
    // Padding has code 0 (nvfp4.cpp), value 0 * sb.
    const uint8_t q = k < k1 ? num::nvfp4_encode_element(xr[k], factor, recipe) : uint8_t{0};
    o[k] = num::e2m1_decode(q) * sbf;
  }
}

cublasHandle_t cublas_handle(std::string* err) {
  static cublasHandle_t h = nullptr;
  if (!h && cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) {
    h = nullptr;
    *err = "cublasCreate failed";
  }
  return h;
}

}  // namespace

std::string linear_f64(const Buffer& x, int64_t rows, int64_t K, const Buffer& w, int64_t N, const Buffer& b,
                       Buffer& y) {
  std::string err;
  cublasHandle_t h = cublas_handle(&err);
  if (!h) return err;
  const double one = 1.0, zero = 0.0;
  // Row-major y = x wᵀ is column-major yᵀ = w' x' with w' = (column-major w)ᵀ.
  const cublasStatus_t st =
      cublasDgemm(h, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(N), static_cast<int>(rows), static_cast<int>(K), &one,
                  w.as<const double>(), static_cast<int>(K), x.as<const double>(), static_cast<int>(K), &zero,
                  y.as<double>(), static_cast<int>(N));
  if (st != CUBLAS_STATUS_SUCCESS) return "cublasDgemm failed (status " + std::to_string(static_cast<int>(st)) + ")";
  if (!b.empty()) {
    const long long n = rows * N;
    bias_kernel<<<static_cast<unsigned>((n + kThreads - 1) / kThreads), kThreads>>>(y.as<double>(), rows, N,
                                                                                   b.as<const double>());
    return launched("bias kernel");
  }
  return {};
}

std::string linear_bf16(const Buffer& x, int64_t rows, int64_t K, const Buffer& w, int64_t N, const Buffer& b,
                        Buffer& y) {
  return gemm<Sum::bf16_lanes, 4, 4>(x, rows, K, w, N, 1.0f, b, y);
}

std::string nvfp4_gemm(const Buffer& xq, int64_t rows, int64_t Kp, const Buffer& wq, int64_t N, float alpha,
                       const Buffer& b, Buffer& y) {
  return gemm<Sum::nvfp4_blocks, 8, 8>(xq, rows, Kp, wq, N, alpha, b, y);
}

std::string amax(const Buffer& x, size_t n, float* out) {
  DeviceBuffer<unsigned> m(1);
  if (m.err != cudaSuccess) return cuda_failure("cudaMalloc", m.err);
  cudaError_t e = cudaMemset(m.p, 0, sizeof(unsigned));
  if (e != cudaSuccess) return cuda_failure("cudaMemset", e);
  const long long blocks = std::min<long long>((static_cast<long long>(n) + kThreads - 1) / kThreads, 132 * 16);
  amax_kernel<<<static_cast<unsigned>(std::max<long long>(blocks, 1)), kThreads>>>(x.as<const float>(),
                                                                                  static_cast<long long>(n), m.p);
  if (std::string err = launched("amax kernel"); !err.empty()) return err;
  unsigned bits = 0;
  e = cudaMemcpy(&bits, m.p, sizeof bits, cudaMemcpyDeviceToHost);
  if (e != cudaSuccess) return cuda_failure("cudaMemcpy amax", e);
  float f;
  std::memcpy(&f, &bits, sizeof f);
  *out = f;
  return {};
}

std::string nvfp4_quantize(const Buffer& x, int64_t rows, int64_t K, float s_enc, float s_dec,
                           num::Nvfp4Recipe recipe, Buffer& out) {
  const long long Kp = (K + num::kNvfp4Block - 1) / num::kNvfp4Block * num::kNvfp4Block;
  const long long n = rows * (Kp / num::kNvfp4Block);
  quantize_kernel<<<static_cast<unsigned>((n + kThreads - 1) / kThreads), kThreads>>>(
      x.as<const float>(), rows, K, Kp, s_enc, s_dec, recipe, out.as<float>());
  return launched("nvfp4 quantize kernel");
}

}  // namespace ts::cuda::blockdev
