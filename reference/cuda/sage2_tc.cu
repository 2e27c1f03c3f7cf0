// The tensor-core kernel of sage2_cuda (kernel=tc): the host emulation's bits
// (reference/attention_sage2.cpp), on the tensor cores. Why the bits survive:
//   - Q·Kᵀ: the INT8 codes on the INT8 tensor cores (mma.sync m16n8k32 s8, int32
//     accumulators, no saturation): the dot product is an exact integer below 2^24
//     (D <= 1024), whatever the order; then the host's two float32 multiplications.
//   - P·V: P8 and V8 are E4M3 values (multiples of 2^-9, 4 significant bits), so
//     every product is exact in float64 and so is every partial sum of a 32-key
//     chunk (multiples of 2^-18 below 2^23): the float64 tensor cores (m16n8k16)
//     give the host's exact chunk sum in any order, and the accumulation modes
//     then round it with the host's functions (sage2_arith.hpp), chunk by chunk
//     in key order.
//   - softmax: a row's maximum is the same in any order (fmaxf, like the host's
//     std::max chain, skips NaN); each P = exp2(s - m) is the host's function of
//     one score, computed in parallel; the row sum of the float32 P, the one
//     order-dependent float step, runs in one thread per row in key order.
// The file builds with -fmad=false, as the host builds with -ffp-contract=off.
//
// Geometry: one block of 16 warps owns 64 queries of one head (the host's query
// tiles of blkq rows only group work: each row's arithmetic is independent of
// them). K streams through shared memory in key blocks of key_block keys (the
// online-softmax unit), V in 32-key chunks (the P·V unit), both by cp.async one
// step ahead. Per key block: scores (each warp 16 rows x key_block/4 keys),
// softmax (each warp 4 rows, 8 lanes per row), then per chunk the P·V sums (each
// warp 16 rows x D/4 columns) folded into the running output, which stays in
// registers (at most 128 a thread: one block of 512 threads per SM). Shared-memory
// fragment reads are free of bank conflicts (padded INT8 rows, swizzled float64
// tiles).
#include <cuda_runtime.h>

#include <cmath>
#include <string>

#include "reference/cuda/sage2_kernel.hpp"
#include "reference/cuda/sage2_tc.cuh"
#include "reference/cuda/tensor_core.cuh"
#include "reference/numerics/convert.hpp"
#include "reference/sage2_arith.hpp"

namespace ts::cuda {
namespace {

constexpr int kBQ = 64, kThreads = 512;
constexpr int kChunk = static_cast<int>(sage2::kPvChunk);
static_assert(kChunk == 32, "two m16n8k16 steps per P·V chunk");

// Shared memory of one block, byte offsets; every region 16-byte aligned.
template <int D, int KB>
struct Smem {
  static constexpr int kRowB = D + 16;  // INT8 row stride: 4g + c distinct banks for any D here
  static constexpr int kSW = KB + 8;    // score row stride (floats): 4 rows x 8 lanes, distinct banks
  static constexpr size_t q = 0;
  static constexpr size_t k = q + static_cast<size_t>(kBQ) * kRowB;
  static constexpr size_t s = k + static_cast<size_t>(KB) * kRowB;
  static constexpr size_t p = s + static_cast<size_t>(kBQ) * kSW * sizeof(float);
  static constexpr size_t v = p + static_cast<size_t>(kBQ) * KB * sizeof(double);  // two chunk buffers
  static constexpr size_t rows = v + 2 * static_cast<size_t>(kChunk) * D * sizeof(double);
  static constexpr size_t bytes = rows + 4 * static_cast<size_t>(kBQ) * sizeof(float);
};
static_assert(Smem<128, 128>::bytes <= 227 * 1024, "a compute capability 9.0 block may opt in to at most 227 KiB");

// Device code for compute capability 9.0+ only (the m16n8k16 float64 mma); older targets get a kernel that
// traps, which the host side never launches (sage2_tc_unsupported).
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900
#define TS_SAGE2_TC_ARCH 1
#endif

#ifdef TS_SAGE2_TC_ARCH
// rows [row0, row0 + rows) of one head's [S][D] INT8 codes into a tile of kRowB-byte rows.
template <int D>
__device__ __forceinline__ void load_codes(int8_t* dst, const int8_t* head, long long row0, int rows, long long S) {
  constexpr int kPer = D / 16;
  for (int i = static_cast<int>(threadIdx.x); i < rows * kPer; i += kThreads) {
    const int r = i / kPer, piece = (i % kPer) * 16;
    const long long s = row0 + r;
    const bool valid = s < S;
    tc::cp_async16(dst + r * (D + 16) + piece, valid ? head + s * D + piece : head, valid);
  }
}

// One 32-key chunk of one head's [S][D] float64 V into a swz_keys tile.
template <int D>
__device__ __forceinline__ void load_v_chunk(double* dst, const double* head, long long row0, long long S) {
  constexpr int kPer = D / 2;
#pragma unroll
  for (int round = 0; round < kChunk * kPer / kThreads; ++round) {
    const int i = round * kThreads + static_cast<int>(threadIdx.x);
    const int r = i / kPer, col = (i % kPer) * 2;
    const long long s = row0 + r;
    const bool valid = s < S;
    tc::cp_async16(dst + r * D + tc::swz_keys(r, col), valid ? head + s * D + col : head, valid);
  }
}

__device__ __forceinline__ unsigned ld32(const int8_t* p) { return *reinterpret_cast<const unsigned*>(p); }
#endif  // TS_SAGE2_TC_ARCH

template <int D, int KB>
__global__ void __launch_bounds__(kThreads, 1) sage2_tc_kernel(Sage2TcArgs a) {
#ifndef TS_SAGE2_TC_ARCH
  __trap();
#else
  using L = Smem<D, KB>;
  constexpr int kRowB = L::kRowB, kSW = L::kSW;
  constexpr int NF = D / 32;  // 8-column output fragments per warp
  constexpr int NQ = KB / 32; // 8-key score fragments per warp
  static_assert(kChunk * (D / 2) % kThreads == 0, "whole rounds of V pieces");
  extern __shared__ __align__(16) unsigned char smem[];
  int8_t* Qs = reinterpret_cast<int8_t*>(smem + L::q);
  int8_t* Ks = reinterpret_cast<int8_t*>(smem + L::k);
  float* Ss = reinterpret_cast<float*>(smem + L::s);     // scores, then this key block's float32 P
  double* Ps = reinterpret_cast<double*>(smem + L::p);   // P8 (E4M3 values), swz_rows
  double* Vs = reinterpret_cast<double*>(smem + L::v);   // two V chunks, swz_keys
  float* m_s = reinterpret_cast<float*>(smem + L::rows);  // running max
  float* den_s = m_s + kBQ;                               // denominator
  float* osc_s = den_s + kBQ;                             // this key block's rescale
  float* qsc_s = osc_s + kBQ;                             // each query's scale

  const int tid = static_cast<int>(threadIdx.x), lane = tid & 31, warp = tid >> 5, g = lane >> 2, c = lane & 3;
  const long long S = a.S, h = blockIdx.y, r0 = static_cast<long long>(blockIdx.x) * kBQ;
  const int nr = static_cast<int>(min(static_cast<long long>(kBQ), S - r0));
  const int8_t* qh = a.q8 + h * S * D;
  const int8_t* kh = a.k8 + h * S * D;
  const double* vh = a.v + h * S * D;
  const float* ksh = a.ks + h * S;
  if (tid < kBQ) {
    m_s[tid] = sage2::kInitialMax;
    den_s[tid] = 0.0f;
    osc_s[tid] = 1.0f;
    qsc_s[tid] = tid < nr ? a.qs[h * S + r0 + tid] : 0.0f;
  }
  load_codes<D>(Qs, qh, r0, kBQ, S);
  load_codes<D>(Ks, kh, 0, KB, S);
  load_v_chunk<D>(Vs, vh, 0, S);
  tc::cp_async_commit();

  const int qm = (warp & 3) * 16, qn = (warp >> 2) * (KB / 4);  // scores: 16 rows x KB/4 keys
  const int sr = warp * 4 + (lane >> 3), part = lane & 7;        // softmax: row sr, keys part, part + 8, ...
  const int wr = (warp & 3) * 16, wd = (warp >> 2) * (D / 4);    // P·V: 16 rows x D/4 columns
  // Running output and this key block's sum (fp32+fp32: float32; fp32+fp16: fp16 values), element
  // [nj][v] at row wr + g + 8 (v >> 1), column wd + 8 nj + 2 c + (v & 1).
  float acc[NF][4], blk[NF][4];
#pragma unroll
  for (int nj = 0; nj < NF; ++nj)
#pragma unroll
    for (int v = 0; v < 4; ++v) acc[nj][v] = blk[nj][v] = 0.0f;

  const long long key_blocks = (S + KB - 1) / KB, chunks = (S + kChunk - 1) / kChunk;
  for (long long t = 0; t < key_blocks; ++t) {
    const long long k0 = t * KB;
    const int nk = static_cast<int>(min(static_cast<long long>(KB), S - k0));
    tc::cp_async_wait_all();
    __syncthreads();  // K_t landed; the last key block's P·V is done with P and V

    // Scores: s = (float(q8·k8) * (q_scale * k_scale)) * sm_scale.
    {
      int sacc[NQ][4];
#pragma unroll
      for (int j = 0; j < NQ; ++j)
#pragma unroll
        for (int v = 0; v < 4; ++v) sacc[j][v] = 0;
#pragma unroll
      for (int kk = 0; kk < D; kk += 32) {
        const int8_t* qp = Qs + (qm + g) * kRowB + kk + 4 * c;
        const unsigned af[4] = {ld32(qp), ld32(qp + 8 * kRowB), ld32(qp + 16), ld32(qp + 8 * kRowB + 16)};
#pragma unroll
        for (int j = 0; j < NQ; ++j) {
          const int8_t* kp = Ks + (qn + 8 * j + g) * kRowB + kk + 4 * c;  // B[k][n] = K[n][k]
          tc::imma(sacc[j], af, ld32(kp), ld32(kp + 16));
        }
      }
#pragma unroll
      for (int j = 0; j < NQ; ++j)
#pragma unroll
        for (int v = 0; v < 4; ++v) {
          const int r = qm + g + 8 * (v >> 1), key = qn + 8 * j + 2 * c + (v & 1);
          if (r < nr && key < nk)
            Ss[r * kSW + key] = (static_cast<float>(sacc[j][v]) * (qsc_s[r] * ksh[k0 + key])) * a.sm_scale;
        }
    }
    __syncthreads();  // scores complete; K_t free
    if (t + 1 < key_blocks) load_codes<D>(Ks, kh, k0 + KB, KB, S);
    tc::cp_async_commit();

    // Online softmax (sage2::softmax_step spread over 8 lanes per row).
    {
      float* row = Ss + sr * kSW;
      const bool live = sr < nr;
      float mx = -INFINITY;
      for (int j = part; j < nk; j += 8) mx = fmaxf(mx, row[j]);
      mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
      mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
      mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 4));
      const float m_old = m_s[sr];
      const float m_new = sage2::softmax_new_max(m_old, mx);
      double* prow = Ps + sr * KB;
#pragma unroll 2
      for (int j = part; j < KB; j += 8) {
        double p8 = 0.0;  // keys past the end weigh nothing
        if (live && j < nk) {
          const float pj = sage2::softmax_p(row[j], m_new);
          row[j] = pj;
          p8 = static_cast<double>(num::e4m3_round(pj));
        }
        prow[tc::swz_rows(sr, j)] = p8;
      }
      __syncwarp();
      if (part == 0 && live) {
        const float oscale = sage2::exp2f_det(m_old - m_new);
        float lsum = 0.0f;
#pragma unroll 8
        for (int j = 0; j < nk; ++j) lsum += row[j];  // key order, as the host
        den_s[sr] = den_s[sr] * oscale + lsum;
        m_s[sr] = m_new;
        osc_s[sr] = oscale;
      }
    }

    // P·V, chunk by chunk in key order.
    const int nch = (nk + kChunk - 1) / kChunk;
    for (int ci = 0; ci < nch; ++ci) {
      const long long chunk = k0 / kChunk + ci;
      tc::cp_async_wait_all();
      __syncthreads();  // this chunk's V landed; P and the row state complete; the other V buffer free
      if (chunk + 1 < chunks) load_v_chunk<D>(Vs + ((chunk + 1) & 1) * kChunk * D, vh, (chunk + 1) * kChunk, S);
      tc::cp_async_commit();
      if (ci == 0) {
#pragma unroll
        for (int v = 0; v < 4; ++v) {
          const float osc = osc_s[wr + g + 8 * (v >> 1)];
#pragma unroll
          for (int nj = 0; nj < NF; ++nj) {
            if (a.accum == 0) acc[nj][v] = acc[nj][v] * osc;
            else blk[nj][v] = 0.0f;
          }
        }
      }
      const double* Vc = Vs + (chunk & 1) * kChunk * D;
      double o[NF][4];
#pragma unroll
      for (int nj = 0; nj < NF; ++nj)
#pragma unroll
        for (int v = 0; v < 4; ++v) o[nj][v] = 0.0;
#pragma unroll
      for (int kk = 0; kk < kChunk; kk += 16) {
        double af[8];
        tc::load_a(af, Ps, KB, wr, ci * kChunk + kk, g, c);
#pragma unroll
        for (int nj = 0; nj < NF; ++nj) {
          double b[4];
#pragma unroll
          for (int x = 0; x < 4; ++x) {
            const int key = kk + c + 4 * x;  // B[k][n] = V[key][d]
            b[x] = Vc[key * D + tc::swz_keys(key, wd + 8 * nj + g)];
          }
          tc::dmma(o[nj], af, b);
        }
      }
#pragma unroll
      for (int nj = 0; nj < NF; ++nj)
#pragma unroll
        for (int v = 0; v < 4; ++v) {
          const double cs = o[nj][v];  // the exact chunk sum
          if (a.accum == 0) acc[nj][v] = sage2::f32_of_sum(acc[nj][v], cs);
          else if (a.accum == 1) blk[nj][v] = sage2::f32_of_sum(blk[nj][v], cs);
          else blk[nj][v] = sage2::fp16_of_double(static_cast<double>(blk[nj][v]) + cs);
        }
    }
    if (a.accum != 0) {
#pragma unroll
      for (int v = 0; v < 4; ++v) {
        const float osc = osc_s[wr + g + 8 * (v >> 1)];
#pragma unroll
        for (int nj = 0; nj < NF; ++nj) acc[nj][v] = acc[nj][v] * osc + blk[nj][v];
      }
    }
  }

  // Finish: O = acc * (1/denominator) * v_scale[channel], float32.
#pragma unroll
  for (int hh = 0; hh < 2; ++hh) {
    const int r = wr + g + 8 * hh;
    if (r >= nr) continue;
    const float den = den_s[r];
#pragma unroll
    for (int nj = 0; nj < NF; ++nj) {
      const int d = wd + 8 * nj + 2 * c;
      float2 o2;
      o2.x = sage2::normalize(acc[nj][2 * hh], den);
      o2.y = sage2::normalize(acc[nj][2 * hh + 1], den);
      if (a.vs) {
        o2.x = o2.x * a.vs[h * D + d];
        o2.y = o2.y * a.vs[h * D + d + 1];
      }
      *reinterpret_cast<float2*>(a.out + ((r0 + r) * a.H + h) * D + d) = o2;
    }
  }
#endif  // TS_SAGE2_TC_ARCH
}

template <int D, int KB>
cudaError_t launch(const Sage2TcArgs& a) {
  constexpr size_t bytes = Smem<D, KB>::bytes;
  cudaError_t e = cudaFuncSetAttribute(sage2_tc_kernel<D, KB>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                       static_cast<int>(bytes));
  if (e != cudaSuccess) return e;
  const dim3 grid(static_cast<unsigned>((a.S + kBQ - 1) / kBQ), static_cast<unsigned>(a.H));
  sage2_tc_kernel<D, KB><<<grid, kThreads, bytes>>>(a);
  return cudaGetLastError();
}

template <int KB>
cudaError_t launch_d(const Sage2TcArgs& a) {
  switch (a.D) {
    case 32: return launch<32, KB>(a);
    case 64: return launch<64, KB>(a);
    case 128: return launch<128, KB>(a);
    default: return cudaErrorInvalidValue;
  }
}

template <int KB>
size_t smem_d(int D) {
  switch (D) {
    case 32: return Smem<32, KB>::bytes;
    case 64: return Smem<64, KB>::bytes;
    case 128: return Smem<128, KB>::bytes;
    default: return 0;
  }
}

}  // namespace

size_t sage2_tc_smem(int D, int key_block) {
  return key_block == 64 ? smem_d<64>(D) : key_block == 128 ? smem_d<128>(D) : 0;
}

cudaError_t sage2_tc_launch(const Sage2TcArgs& a) {
  return a.key_block == 64 ? launch_d<64>(a) : a.key_block == 128 ? launch_d<128>(a) : cudaErrorInvalidValue;
}

std::string sage2_tc_unsupported(long long H, int D, int key_block) {
  if (D != 32 && D != 64 && D != 128) return "head dim " + std::to_string(D) + " (the kernel takes 32, 64 or 128)";
  const size_t bytes = sage2_tc_smem(D, key_block);
  if (bytes == 0) return "key_block " + std::to_string(key_block) + " (the kernel takes 64 or 128)";
  return tc::dmma_kernel_unsupported(H, bytes);
}

}  // namespace ts::cuda
