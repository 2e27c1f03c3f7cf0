// The fused ("flash") float64 kernel of exact_cuda: no score matrix in memory.
//
// One block of 8 warps owns 128 queries of one head; each warp owns 16 of them
// for the whole key loop, so the scores of a tile never leave its registers: the
// Q·Kᵀ accumulators become the P·V products' A operand (see the key order
// below), and the online softmax (running max, rescale, row sums) works on them
// in place with two shuffles per row. Only the block-wide syncs that guard the
// reuse of K/V buffers remain, two per tile of 32 keys.
//
// Both products run on the float64 tensor cores (mma.sync m16n8k16 f64, compute
// capability 9.0+). The Q tile stays in shared memory; K and V tiles stream
// through a ring of three buffers, each row one bulk copy (the copy engine: a
// warp issues 4 copies per tile and waits on a barrier, no thread computes
// addresses or holds registers for them), each tile asked for a whole phase
// before it is needed (K of the next tile while this one's Q·Kᵀ runs, V of the
// next while this one's P·V runs).
//
// Every fragment is read from shared memory free of bank conflicts, most of
// them by 16-byte loads that land in the mma's operand registers as they are,
// which fixes the layouts and the orders below (they only relabel the terms of
// a sum):
// - Q·Kᵀ: the mma's k index c + 4j (lane c) stands for head dim 4c + j, so a
//   lane's B operand is 4 consecutive dims of a K row; Q is stored with rows r
//   and r + 8 interleaved, so one load gives an A operand's two rows;
// - P·V: its k index c + 4j stands for key 2c + (j & 1) + 8 (j >> 1) of a
//   16-key step, which is where the Q·Kᵀ accumulators hold them.
// K and V rows are D + 2 doubles apart (the copies cannot swizzle), which puts
// the rows a fragment reads in distinct banks.
// exp is exp_nonpos below (a table and a degree-7 polynomial, no branch): its
// arguments are never positive. The streamed softmax sums in another order than
// the host's: within 1e-13 relative (tests/cuda).
#include <cuda_runtime.h>

#include <string>

#include "reference/cuda/exact_flash.cuh"
#include "reference/cuda/exact_kernel.hpp"
#include "reference/cuda/tensor_core.cuh"

namespace ts::cuda {
namespace {

constexpr int kWarps = 8, kBQ = 16 * kWarps, kBK = 32, kThreads = 32 * kWarps, kRing = 3, kTable = 16;
static_assert(kBK % kWarps == 0 && kBK / kWarps <= 32, "each warp copies its rows of a K/V tile");

// Q (128 x D), three K/V buffers (32 rows of D + 2), exp's table and the buffers' barriers: 225.6 KiB at
// D = 128, of the 227 a block may have.
template <int D>
constexpr size_t smem_bytes() {
  return (static_cast<size_t>(kBQ) * D + static_cast<size_t>(kRing) * kBK * (D + 2) + kTable + kRing) *
         sizeof(double);
}
static_assert(smem_bytes<128>() <= 227 * 1024, "a compute capability 9.0 block may opt in to at most 227 KiB");

// Device code for compute capability 9.0+ only (cp.async, the m16n8k16 float64 mma); older targets get a
// kernel that traps, which the host side never launches (exact_flash_unsupported).
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900
#define TS_FLASH_ARCH 1
#endif

#ifdef TS_FLASH_ARCH
using tc::cp_async8;
using tc::cp_async_commit;
using tc::cp_async_wait_all;
using tc::dmma;

// The copy engine's side: a bulk copy of whole rows into shared memory that counts its bytes on an
// mbarrier (one arrival per warp, with its bytes), which the threads wait on (phase parity). Compute
// capability 9.0+.
__device__ __forceinline__ unsigned smem_u32(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void mbar_init(unsigned long long* bar) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_u32(bar)), "r"(kWarps) : "memory");
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}
__device__ __forceinline__ void mbar_expect(unsigned long long* bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(smem_u32(bar)), "r"(bytes)
               : "memory");
}
__device__ __forceinline__ void mbar_wait(unsigned long long* bar, unsigned parity) {
  asm volatile(
      "{\n .reg .pred done;\n WAIT_%=:\n mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      " @!done bra WAIT_%=;\n}\n" ::"r"(smem_u32(bar)),
      "r"(parity)
      : "memory");
}
__device__ __forceinline__ void bulk_copy(void* dst, const void* src, unsigned bytes, unsigned long long* bar) {
  // The buffer was last read by ordinary loads (ordered before by a block sync): order them before the
  // copy engine's writes.
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(
                   smem_u32(dst)),
               "l"(src), "r"(bytes), "r"(smem_u32(bar))
               : "memory");
}

// 2^(j/16), correctly rounded.
__constant__ double kExp2Sixteenths[kTable] = {
    0x1.0000000000000p+0, 0x1.0b5586cf9890fp+0, 0x1.172b83c7d517bp+0, 0x1.2387a6e756238p+0,
    0x1.306fe0a31b715p+0, 0x1.3dea64c123422p+0, 0x1.4bfdad5362a27p+0, 0x1.5ab07dd485429p+0,
    0x1.6a09e667f3bcdp+0, 0x1.7a11473eb0187p+0, 0x1.8ace5422aa0dbp+0, 0x1.9c49182a3f090p+0,
    0x1.ae89f995ad3adp+0, 0x1.c199bdd85529cp+0, 0x1.d5818dcfba487p+0, 0x1.ea4afa2a490dap+0};

// exp(x) for x <= 0 (or NaN), within 1 ulp (60 M random arguments against glibc's exp), subnormal results included, in 13 float64 operations and
// no branch (the library's exp has a slow path that costs a call and a divergence point per use):
// x = (16 e + j) ln2/16 + r with |r| <= ln2/32, exp(x) = 2^e · 2^(j/16) · exp(r), exp(r) by its Taylor
// polynomial of degree 7 (the first omitted term is below 1.2e-18 relative). 2^(e + 512) is applied to the
// table entry exactly, and 2^-512 last, so results below the normal range round once.
__device__ __forceinline__ double exp_nonpos(double x, const double* table) {
  x = x < -746.0 ? -746.0 : x;  // exp(-746) rounds to 0; NaN stays NaN
  const double shifter = 0x1.8p52;
  const double t = fma(x, 0x1.71547652b82fep+4, shifter);  // 16 x / ln2, rounded to an integer k in its low bits
  const int k = __double2loint(t);
  const double kd = t - shifter;
  double r = fma(kd, -0x1.62e42fefa39efp-5, x);
  r = fma(kd, -0x1.abc9e3b39803fp-60, r);
  double p = fma(r, 0x1.a01a01a01a01ap-13, 0x1.6c16c16c16c17p-10);
  p = fma(p, r, 0x1.1111111111111p-7);
  p = fma(p, r, 0x1.5555555555555p-5);
  p = fma(p, r, 0x1.5555555555555p-3);
  p = fma(p, r, 0.5);
  p = fma(p, r, 1.0);
  const double pm1 = p * r;  // exp(r) - 1: the table entry is added last, in one rounding
  const double entry = table[k & (kTable - 1)];
  const int exponent_step = static_cast<int>(static_cast<unsigned>((k >> 4) + 512) << 20);
  const double scaled = __hiloint2double(__double2hiint(entry) + exponent_step, __double2loint(entry));
  return fma(scaled, pm1, scaled) * 0x1p-512;
}

// Where the Q tile keeps element (row, d), in doubles. Rows 16w + i and 16w + 8 + i (i < 8) share "pair
// row" 8w + i, d-major, the two rows side by side; the A loads read pair rows i, i + 1 at dims 4c + j
// (c = 0..3, 8 lanes x 16 bytes per shared-memory wavefront): an XOR of d by the pair row's parity and by
// bit 3 of d (into bit 1) puts all eight in distinct banks.
template <int D>
__device__ __forceinline__ int q_at(int row, int d) {
  const int pr = (row >> 4) * 8 + (row & 7);
  return (pr * D + (d ^ (((d >> 3) & 1) << 1) ^ (pr & 1))) * 2 + ((row >> 3) & 1);
}

// Rows [q0, q0 + kBQ) of one head of a [S, H, D] array into the Q tile, 8 bytes at a time (the layout
// interleaves two rows element by element); rows past S are zeros. Once per block.
template <int D>
__device__ __forceinline__ void load_q(double* dst, const double* head, long long q0, long long S, long long HD) {
  constexpr int kRowsPerRound = kThreads / D;
  const int r0 = static_cast<int>(threadIdx.x) / D, d = static_cast<int>(threadIdx.x) % D;
#pragma unroll 4
  for (int round = 0; round < kBQ / kRowsPerRound; ++round) {
    const int r = r0 + kRowsPerRound * round;
    const bool valid = q0 + r < S;
    cp_async8(dst + q_at<D>(r, d), valid ? head + (q0 + r) * HD + d : head, valid);
  }
}

__device__ __forceinline__ double2 lds2(const double* p) { return *reinterpret_cast<const double2*>(p); }
#endif  // TS_FLASH_ARCH

template <int D>
__global__ void __launch_bounds__(kThreads, 1)
    exact_flash(const double* __restrict__ q, const double* __restrict__ k, const double* __restrict__ v,
                double* __restrict__ out, long long S, int H, double scale) {
#ifndef TS_FLASH_ARCH
  __trap();
#else
  constexpr int ST = D + 2;  // K/V row stride
  extern __shared__ __align__(16) double smem[];
  double* Qs = smem;
  double* KV = Qs + kBQ * D;  // ring buffer i % 3 holds item i: K of tile i / 2 (even i), V (odd i)
  double* table = KV + kRing * kBK * ST;
  auto* full = reinterpret_cast<unsigned long long*>(table + kTable);  // one barrier per buffer
  constexpr int NT = D / 8;                                              // output tiles of 8 dims per warp
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, g = lane >> 2, c = lane & 3;
  const long long HD = static_cast<long long>(H) * D;
  const long long q0 = static_cast<long long>(blockIdx.x) * kBQ;
  const double* qh = q + static_cast<long long>(blockIdx.y) * D;
  const double* kh = k + static_cast<long long>(blockIdx.y) * D;
  const double* vh = v + static_cast<long long>(blockIdx.y) * D;
  const long long tiles = (S + kBK - 1) / kBK;
  // Every warp asks for its 4 rows of item `item` into buffer `slot`, a row a lane (the copy instruction takes
  // its operands from uniform registers, so a warp issues its copies one at a time: spread, they cost each
  // warp 4 and keep the warps in step); rows past S are zeros (0 · NaN is NaN).
  auto request = [&](long long item, int slot) {
    constexpr int kRowsPerWarp = kBK / kWarps;
    const long long key0 = (item >> 1) * kBK;
    const int rows = S - key0 < kBK ? static_cast<int>(S - key0) : kBK;
    const int mine = rows - kRowsPerWarp * warp, row = kRowsPerWarp * warp + lane;
    double* dst = KV + slot * kBK * ST + row * ST;
    if (lane == 0)
      mbar_expect(full + slot, static_cast<unsigned>((mine < 0 ? 0 : mine < kRowsPerWarp ? mine : kRowsPerWarp) *
                                                     D * sizeof(double)));
    __syncwarp();
    if (lane >= kRowsPerWarp) return;
    if (row < rows)
      bulk_copy(dst, ((item & 1) ? vh : kh) + (key0 + row) * HD, D * sizeof(double), full + slot);
    else
      for (int d = 0; d < D; ++d) dst[d] = 0.0;
  };
  if (tid < kTable) table[tid] = kExp2Sixteenths[tid];
  if (tid < kRing) mbar_init(full + tid);
  load_q<D>(Qs, qh, q0, S, HD);
  cp_async_commit();
  __syncthreads();  // the barriers are set up
  request(0, 0);
  request(1, 1);

  // This lane's fragment addresses at kk = 0, key 0 (the loops add compile-time offsets): A of Q·Kᵀ at dim
  // 4c + j (rows 16 warp + g and + 8 together; the swizzle only flips bits 1 and 2 of the offset, so dim
  // 4c + j is at qa ^ 2j), B of Q·Kᵀ at dims 4c..4c+3 of key g, B of P·V at key 2c and dim g.
  const int qa = q_at<D>(16 * warp + g, 4 * c), kb = g * ST + 4 * c, vb = 2 * c * ST + g;

  // o[j][x]: row 16 warp + g + 8 (x >> 1), dim 8j + 2c + (x & 1).
  double o[NT][4];
#pragma unroll
  for (int j = 0; j < NT; ++j)
#pragma unroll
    for (int x = 0; x < 4; ++x) o[j][x] = 0.0;
  double m[2] = {-INFINITY, -INFINITY};  // running max of the scaled scores, rows g and g + 8
  double l[2] = {0.0, 0.0};              // this lane's part of the running row sums
  // s[n][x]: row 16 warp + g + 8 (x >> 1), key 8n + 2c + (x & 1) of the tile: scores, then their exp.
  double s[kBK / 8][4];

  // Items 2t (K of tile t) and 2t + 1 (its V) in a ring of three buffers: each request goes out as soon as
  // the buffer it overwrites is free, two phases before the data is needed.
  cp_async_wait_all();  // Q (this thread's part)
  int ks = 0;           // K_t's buffer; V_t's is the next, K_{t+1}'s the one after, V_{t+1} takes K_t's
  for (long long t = 0; t < tiles; ++t) {
    const long long key0 = t * kBK;
    const int vs = ks == kRing - 1 ? 0 : ks + 1, nks = vs == kRing - 1 ? 0 : vs + 1;
    const unsigned use = static_cast<unsigned>(((2 * t) / kRing) & 1);
    __syncthreads();  // every warp is done with V_{t-1} (and Q and the zero rows are in place)
    if (t + 1 < tiles) request(2 * t + 2, nks);
    mbar_wait(full + ks, use);
    {
      const double* tile = KV + ks * kBK * ST;
#pragma unroll
      for (int n = 0; n < kBK / 8; ++n)
#pragma unroll
        for (int x = 0; x < 4; ++x) s[n][x] = 0.0;
      // Two steps at a time: the whole loop unrolled needs more than the 255 registers a thread has.
#pragma unroll 2
      for (int kk = 0; kk < D; kk += 16) {
        double a[8];
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          const double2 w = lds2(Qs + (qa ^ (2 * j)) + 2 * kk);
          a[2 * j] = w.x;
          a[2 * j + 1] = w.y;
        }
#pragma unroll
        for (int n = 0; n < kBK / 8; ++n) {
          const double2 lo = lds2(tile + kb + 8 * n * ST + kk), hi = lds2(tile + kb + 8 * n * ST + kk + 2);
          const double b[4] = {lo.x, lo.y, hi.x, hi.y};
          dmma(s[n], a, b);
        }
      }
    }
    // Online softmax on the registers: keys past the end weigh nothing.
    if (key0 + kBK > S) {
#pragma unroll
      for (int n = 0; n < kBK / 8; ++n)
#pragma unroll
        for (int x = 0; x < 4; ++x)
          if (key0 + 8 * n + 2 * c + (x & 1) >= S) s[n][x] = -INFINITY;
    }
    double alpha[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      double mx = -INFINITY;
#pragma unroll
      for (int n = 0; n < kBK / 8; ++n) mx = fmax(mx, fmax(s[n][2 * h], s[n][2 * h + 1]));
      mx = fmax(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
      mx = fmax(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
      // Rounding is monotonic, so the max of the scaled scores is the scaled max; finite: every
      // tile holds a key.
      const double m_new = fmax(m[h], mx * scale);
      alpha[h] = exp_nonpos(m[h] - m_new, table);
      m[h] = m_new;
      double sum = 0.0;
#pragma unroll
      for (int n = 0; n < kBK / 8; ++n)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const double pe = exp_nonpos(fma(s[n][2 * h + e], scale, -m_new), table);
          s[n][2 * h + e] = pe;
          sum += pe;
        }
      l[h] = l[h] * alpha[h] + sum;
    }
    // The max of a row seldom moves after the first tiles: skip the rescale when no row of the warp moved.
    if (!__all_sync(0xffffffffu, alpha[0] == 1.0 && alpha[1] == 1.0)) {
#pragma unroll
      for (int j = 0; j < NT; ++j) {
        o[j][0] *= alpha[0];
        o[j][1] *= alpha[0];
        o[j][2] *= alpha[1];
        o[j][3] *= alpha[1];
      }
    }
    __syncthreads();  // every warp is done with K_t
    if (t + 1 < tiles) request(2 * t + 3, ks);
    mbar_wait(full + vs, static_cast<unsigned>(((2 * t + 1) / kRing) & 1));
    {
      const double* tile = KV + vs * kBK * ST + vb;
#pragma unroll
      for (int u = 0; u < kBK / 16; ++u) {
        const double a[8] = {s[2 * u][0],     s[2 * u][2],     s[2 * u][1],     s[2 * u][3],
                             s[2 * u + 1][0], s[2 * u + 1][2], s[2 * u + 1][1], s[2 * u + 1][3]};
#pragma unroll
        for (int j = 0; j < NT; ++j) {
          // b[x] = V[16u + 2c + (x & 1) + 8 (x >> 1)][8j + g]
          const double b[4] = {tile[16 * u * ST + 8 * j], tile[(16 * u + 1) * ST + 8 * j],
                               tile[(16 * u + 8) * ST + 8 * j], tile[(16 * u + 9) * ST + 8 * j]};
          dmma(o[j], a, b);
        }
      }
    }
    ks = nks;
  }
  // The row sums: this lane's part plus its three neighbours' (the lanes of one row).
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    l[h] += __shfl_xor_sync(0xffffffffu, l[h], 1);
    l[h] += __shfl_xor_sync(0xffffffffu, l[h], 2);
  }
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const long long sq = q0 + 16 * warp + g + 8 * h;
    if (sq >= S) continue;
    double* row = out + sq * HD + static_cast<long long>(blockIdx.y) * D + 2 * c;
#pragma unroll
    for (int j = 0; j < NT; ++j)
      *reinterpret_cast<double2*>(row + 8 * j) = {o[j][2 * h] / l[h], o[j][2 * h + 1] / l[h]};
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
