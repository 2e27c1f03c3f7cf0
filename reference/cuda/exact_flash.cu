// The fused ("flash") float64 kernel of exact_cuda: no score matrix in memory.
//
// One block of 8 warps owns 64 queries of one head. Their Q tile stays in shared
// memory; K and V stream through it in tiles of 64 keys (cp.async, the next K
// tile loading during the softmax and P·V of this one, the next V tile during
// Q·Kᵀ). Both products run on the float64 tensor cores (mma.sync m16n8k16 f64,
// compute capability 9.0+), each warp a 32 x 16 score tile and a 32 x D/4 output tile, all
// shared-memory fragment reads free of bank conflicts (swizzled tiles). Between
// them the scores go through shared memory for an online softmax in float64
// (running max, rescaled row sums, fixed reduction order); the output is divided
// by the row sum at the end, as the host reference does. The streamed softmax
// sums in another order than the host's: within 1e-13 relative (tests/cuda).
//
// Why one block per SM of 8 warps: float64 tiles are large; Q (64 x 128), K and
// V (64 x 128 each) and P (64 x 64) take 225.5 KiB of the 227 a block may have.
#include <cuda_runtime.h>

#include <string>

#include "reference/cuda/exact_flash.cuh"
#include "reference/cuda/exact_kernel.hpp"
#include "reference/cuda/tensor_core.cuh"

namespace ts::cuda {
namespace {

constexpr int kBQ = 64, kBK = 64, kThreads = 256;

template <int D>
constexpr size_t smem_bytes() {
  return (static_cast<size_t>(kBQ) * D + 2 * static_cast<size_t>(kBK) * D + static_cast<size_t>(kBQ) * kBK +
          3 * kBQ) *
         sizeof(double);
}
static_assert(smem_bytes<128>() <= 227 * 1024, "a compute capability 9.0 block may opt in to at most 227 KiB");

// Device code for compute capability 9.0+ only (cp.async, the m16n8k16 float64 mma); older targets get a
// kernel that traps, which the host side never launches (exact_flash_unsupported).
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900
#define TS_FLASH_ARCH 1
#endif

#ifdef TS_FLASH_ARCH
// Q, K and P tiles are [row][width] with each row's 4-column groups XOR-ed by row & 7:
// a fragment reads 8 rows x 4 columns, which then fall in distinct banks per half warp
// (and so do the softmax's 4 rows x 4 interleaved columns), with no padding, which the
// 227 KiB of shared memory has no room for. The V tile is [key][D] read as 4 keys x 8
// columns: XOR by key & 3 (tensor_core.cuh).
__device__ __forceinline__ int swz_qk(int row, int col) { return tc::swz_rows(row, col); }
__device__ __forceinline__ int swz_v(int row, int col) { return tc::swz_keys(row, col); }
using tc::cp_async16;
using tc::cp_async_commit;
using tc::cp_async_wait_all_but_one;
using tc::dmma;
using tc::load_a;

// rows [row0, row0 + kRows) of one head of a [S, H, D] array into a swizzled tile.
template <int D, int kRows, bool kV>
__device__ __forceinline__ void load_tile(double* dst, const double* head, long long row0, long long S,
                                          long long HD) {
  constexpr int kPieces = kRows * D / 2;  // 16 bytes each
  static_assert(kPieces % kThreads == 0, "whole rounds of pieces");
#pragma unroll
  for (int round = 0; round < kPieces / kThreads; ++round) {
    const int i = round * kThreads + static_cast<int>(threadIdx.x);
    const int r = i / (D / 2), col = (i % (D / 2)) * 2;
    const long long s = row0 + r;
    const bool valid = s < S;
    cp_async16(dst + r * D + (kV ? swz_v(r, col) : swz_qk(r, col)), valid ? head + s * HD + col : head, valid);
  }
}

#endif  // TS_FLASH_ARCH

template <int D>
__global__ void __launch_bounds__(kThreads, 1)
    exact_flash(const double* __restrict__ q, const double* __restrict__ k, const double* __restrict__ v,
                double* __restrict__ out, long long S, int H, double scale) {
#ifndef TS_FLASH_ARCH
  __trap();
#else
  extern __shared__ __align__(16) double smem[];
  double* Qs = smem;
  double* Ks = Qs + kBQ * D;
  double* Vs = Ks + kBK * D;
  double* Ps = Vs + kBK * D;
  double* m_s = Ps + kBQ * kBK;  // running row max
  double* l_s = m_s + kBQ;        // running row sum
  double* a_s = l_s + kBQ;        // this tile's rescale factor exp(m_old - m_new)
  constexpr int NF = D / 32;      // 8-column output fragments per warp
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, g = lane >> 2, c = lane & 3;
  const long long HD = static_cast<long long>(H) * D;
  const long long q0 = static_cast<long long>(blockIdx.x) * kBQ;
  const double* qh = q + static_cast<long long>(blockIdx.y) * D;
  const double* kh = k + static_cast<long long>(blockIdx.y) * D;
  const double* vh = v + static_cast<long long>(blockIdx.y) * D;
  if (tid < kBQ) {
    m_s[tid] = -INFINITY;
    l_s[tid] = 0.0;
  }
  load_tile<D, kBQ, false>(Qs, qh, q0, S, HD);
  load_tile<D, kBK, false>(Ks, kh, 0, S, HD);
  cp_async_commit();
  load_tile<D, kBK, true>(Vs, vh, 0, S, HD);
  cp_async_commit();

  const int wr = (warp & 1) * 32;        // this warp's 32 query rows (both products)
  const int wc = (warp >> 1) * 16;       // its 16 keys of the score tile
  const int wd = (warp >> 1) * (D / 4);  // its D/4 output columns
  // Accumulator [mi][nj][v]: row wr + 16 mi + g + 8 (v >> 1), column (key or d) base + 8 nj
  // + 2 c + (v & 1).
  double o[2][NF][4];
#pragma unroll
  for (int mi = 0; mi < 2; ++mi)
#pragma unroll
    for (int nj = 0; nj < NF; ++nj)
#pragma unroll
      for (int x = 0; x < 4; ++x) o[mi][nj][x] = 0.0;

  const long long tiles = (S + kBK - 1) / kBK;
  for (long long t = 0; t < tiles; ++t) {
    const long long key0 = t * kBK;
    cp_async_wait_all_but_one();  // K_t (and Q) landed; V_t may still be in flight
    __syncthreads();
    double sacc[2][2][4];
#pragma unroll
    for (int mi = 0; mi < 2; ++mi)
#pragma unroll
      for (int nj = 0; nj < 2; ++nj)
#pragma unroll
        for (int x = 0; x < 4; ++x) sacc[mi][nj][x] = 0.0;
#pragma unroll 2
    for (int kk = 0; kk < D; kk += 16) {
      double a[2][8], b[2][4];
#pragma unroll
      for (int mi = 0; mi < 2; ++mi) load_a(a[mi], Qs, D, wr + 16 * mi, kk, g, c);
#pragma unroll
      for (int nj = 0; nj < 2; ++nj)
#pragma unroll
        for (int x = 0; x < 4; ++x) {
          const int r = wc + 8 * nj + g;  // B[k][n] = K[n][k]
          b[nj][x] = Ks[r * D + swz_qk(r, kk + c + 4 * x)];
        }
#pragma unroll
      for (int mi = 0; mi < 2; ++mi)
#pragma unroll
        for (int nj = 0; nj < 2; ++nj) dmma(sacc[mi][nj], a[mi], b[nj]);
    }
    __syncthreads();  // every warp is done with K_t and with the last tile's P
    if (t + 1 < tiles) load_tile<D, kBK, false>(Ks, kh, key0 + kBK, S, HD);
    cp_async_commit();
    // Scaled scores into P; keys past the end weigh nothing.
#pragma unroll
    for (int mi = 0; mi < 2; ++mi)
#pragma unroll
      for (int nj = 0; nj < 2; ++nj)
#pragma unroll
        for (int hh = 0; hh < 2; ++hh) {
          const int r = wr + 16 * mi + g + 8 * hh, col = wc + 8 * nj + 2 * c;
          double2 s2;
          s2.x = key0 + col < S ? sacc[mi][nj][2 * hh] * scale : -INFINITY;
          s2.y = key0 + col + 1 < S ? sacc[mi][nj][2 * hh + 1] * scale : -INFINITY;
          *reinterpret_cast<double2*>(Ps + r * kBK + swz_qk(r, col)) = s2;
        }
    __syncthreads();
    {
      // Online softmax, 4 threads per row (columns part, part + 4, ...), fixed order.
      const int r = tid >> 2, part = tid & 3;
      double* row = Ps + r * kBK;
      const double m_old = m_s[r];
      double mx = -INFINITY;
#pragma unroll
      for (int e = 0; e < kBK / 4; ++e) mx = fmax(mx, row[swz_qk(r, part + 4 * e)]);
      mx = fmax(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
      mx = fmax(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
      const double m_new = fmax(m_old, mx);  // finite: every tile holds a key
      double sum = 0.0;
#pragma unroll
      for (int e = 0; e < kBK / 4; ++e) {
        double& x = row[swz_qk(r, part + 4 * e)];
        const double p = exp(x - m_new);
        x = p;
        sum += p;
      }
      sum += __shfl_xor_sync(0xffffffffu, sum, 1);
      sum += __shfl_xor_sync(0xffffffffu, sum, 2);
      const double alpha = exp(m_old - m_new);
      __syncwarp();
      if (part == 0) {
        m_s[r] = m_new;
        l_s[r] = l_s[r] * alpha + sum;
        a_s[r] = alpha;
      }
    }
    cp_async_wait_all_but_one();  // V_t landed; K_{t+1} may still be in flight
    __syncthreads();
#pragma unroll
    for (int mi = 0; mi < 2; ++mi)
#pragma unroll
      for (int hh = 0; hh < 2; ++hh) {
        const double alpha = a_s[wr + 16 * mi + g + 8 * hh];
#pragma unroll
        for (int nj = 0; nj < NF; ++nj) {
          o[mi][nj][2 * hh] *= alpha;
          o[mi][nj][2 * hh + 1] *= alpha;
        }
      }
#pragma unroll
    for (int kk = 0; kk < kBK; kk += 16) {
      double a[2][8], b[NF][4];
#pragma unroll
      for (int mi = 0; mi < 2; ++mi) load_a(a[mi], Ps, kBK, wr + 16 * mi, kk, g, c);
#pragma unroll
      for (int nj = 0; nj < NF; ++nj)
#pragma unroll
        for (int x = 0; x < 4; ++x) {
          const int key = kk + c + 4 * x;  // B[k][n] = V[key][d]
          b[nj][x] = Vs[key * D + swz_v(key, wd + 8 * nj + g)];
        }
#pragma unroll
      for (int mi = 0; mi < 2; ++mi)
#pragma unroll
        for (int nj = 0; nj < NF; ++nj) dmma(o[mi][nj], a[mi], b[nj]);
    }
    __syncthreads();  // every warp is done with V_t
    if (t + 1 < tiles) load_tile<D, kBK, true>(Vs, vh, key0 + kBK, S, HD);
    cp_async_commit();
  }
#pragma unroll
  for (int mi = 0; mi < 2; ++mi)
#pragma unroll
    for (int hh = 0; hh < 2; ++hh) {
      const int r = wr + 16 * mi + g + 8 * hh;
      const long long s = q0 + r;
      if (s >= S) continue;
      const double l = l_s[r];
#pragma unroll
      for (int nj = 0; nj < NF; ++nj) {
        double2 o2;
        o2.x = o[mi][nj][2 * hh] / l;
        o2.y = o[mi][nj][2 * hh + 1] / l;
        *reinterpret_cast<double2*>(out + s * HD + static_cast<long long>(blockIdx.y) * D + wd + 8 * nj + 2 * c) =
            o2;
      }
    }
#endif  // TS_FLASH_ARCH
}

template <int D>
cudaError_t launch(const double* q, const double* k, const double* v, double* out, long long S, long long H,
                   double scale) {
  constexpr size_t bytes = smem_bytes<D>();
  cudaError_t e = cudaFuncSetAttribute(exact_flash<D>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                       static_cast<int>(bytes));
  if (e != cudaSuccess) return e;
  const dim3 grid(static_cast<unsigned>((S + kBQ - 1) / kBQ), static_cast<unsigned>(H));
  exact_flash<D><<<grid, kThreads, bytes>>>(q, k, v, out, S, static_cast<int>(H), scale);
  return cudaGetLastError();
}

size_t smem_for(int D) {
  switch (D) {
    case 32: return smem_bytes<32>();
    case 64: return smem_bytes<64>();
    case 128: return smem_bytes<128>();
    default: return 0;
  }
}

}  // namespace

std::string exact_flash_unsupported(long long H, int D) {
  const size_t bytes = smem_for(D);
  if (bytes == 0) return "head dim " + std::to_string(D) + " (the fused kernel takes 32, 64 or 128)";
  return tc::dmma_kernel_unsupported(H, bytes);
}

cudaError_t exact_flash_launch(const double* q, const double* k, const double* v, double* out, long long S,
                               long long H, int D, double scale) {
  switch (D) {
    case 32: return launch<32>(q, k, v, out, S, H, scale);
    case 64: return launch<64>(q, k, v, out, S, H, scale);
    case 128: return launch<128>(q, k, v, out, S, H, scale);
    default: return cudaErrorInvalidValue;
  }
}

}  // namespace ts::cuda
