// The fused ("flash") float64 kernel of exact_cuda: no score matrix in memory.
//
// One block of 8 warps owns 128 queries of one head; each warp owns 16 of them
// for the whole key loop, so the scores of a tile never leave its registers: the
// Q·Kᵀ accumulators become the P·V products' A operand (see the key order
// below), and the online softmax (running max, rescale, row sums) works on them
// in place with two shuffles per row.
//
// Both products run on the float64 tensor cores (mma.sync m16n8k16 f64, compute
// capability 9.0+), which share their pipe with the float64 ALU: every float64
// operation of the softmax costs tensor-core time, so the softmax is written
// to need few of them. The Q tile stays in shared memory; K and V tiles of 32
// keys stream through a ring of three buffers, each tile one copy-engine
// (TMA) request. No block-wide sync: a warp done with a buffer counts itself
// out, and the last warp out asks for the tile that reuses it, so warps drift
// apart and one warp's softmax meets another's products.
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
// K and V rows are D + 2 doubles apart (the copy engine reads 2 doubles past
// each row into the padding), which puts the rows a fragment reads in
// distinct banks.
// exp is exp2_nonpos below (a table and a degree-5 polynomial, no branch), on
// scores scaled to units of ln2/128 (one multiplier, scale · 128/ln2), where
// its range reduction is exact and needs one operation where exp(x)'s needs
// three; its arguments are never positive. The streamed softmax sums in another
// order than the host's: within 1e-13 relative (tests/cuda).
#include <cuda.h>
#include <cuda_runtime.h>
#include <cudaTypedefs.h>

#include <string>

#include "reference/cuda/exact_flash.cuh"
#include "reference/cuda/exact_kernel.hpp"
#include "reference/cuda/tensor_core.cuh"

namespace ts::cuda {
namespace {
constexpr int kWarps = 8, kBQ = 16 * kWarps, kBK = 32, kThreads = 32 * kWarps, kRing = 3, kTable = 128;

// Q (128 x D), three K/V buffers (32 rows of D + 2), exp's table, the buffers' barriers and their release
// counts: 226.6 KiB at D = 128, of the 227 a block may have.
template <int D>
constexpr size_t smem_bytes() {
  return (static_cast<size_t>(kBQ) * D + static_cast<size_t>(kRing) * kBK * (D + 2) + kTable + 2 * kRing) *
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
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_u32(bar)), "r"(1) : "memory");
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}
__device__ __forceinline__ void mbar_wait(unsigned long long* bar, unsigned parity) {
  asm volatile(
      "{\n .reg .pred done;\n WAIT_%=:\n mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      " @!done bra WAIT_%=;\n}\n" ::"r"(smem_u32(bar)),
      "r"(parity)
      : "memory");
}
// Rows [key0, key0 + kBK) of one head, D + 2 doubles each (the 2 past a row's end land in the padding;
// past the last head or the last key the copy engine writes zeros), into a K/V buffer; one thread.
__device__ __forceinline__ void tile_copy(void* dst, const CUtensorMap* map, int col, int key0,
                                          unsigned long long* bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(smem_u32(bar)), "r"(bytes)
               : "memory");
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n" ::
          "r"(smem_u32(dst)),
      "l"(reinterpret_cast<unsigned long long>(map)), "r"(col), "r"(key0), "r"(smem_u32(bar))
      : "memory");
}

// 2^(j/128), correctly rounded.
__constant__ double kExp2Table[kTable] = {
    0x1.0000000000000p+0, 0x1.0163da9fb3335p+0, 0x1.02c9a3e778061p+0, 0x1.04315e86e7f85p+0,
    0x1.059b0d3158574p+0, 0x1.0706b29ddf6dep+0, 0x1.0874518759bc8p+0, 0x1.09e3ecac6f383p+0,
    0x1.0b5586cf9890fp+0, 0x1.0cc922b7247f7p+0, 0x1.0e3ec32d3d1a2p+0, 0x1.0fb66affed31bp+0,
    0x1.11301d0125b51p+0, 0x1.12abdc06c31ccp+0, 0x1.1429aaea92de0p+0, 0x1.15a98c8a58e51p+0,
    0x1.172b83c7d517bp+0, 0x1.18af9388c8deap+0, 0x1.1a35beb6fcb75p+0, 0x1.1bbe084045cd4p+0,
    0x1.1d4873168b9aap+0, 0x1.1ed5022fcd91dp+0, 0x1.2063b88628cd6p+0, 0x1.21f49917ddc96p+0,
    0x1.2387a6e756238p+0, 0x1.251ce4fb2a63fp+0, 0x1.26b4565e27cddp+0, 0x1.284dfe1f56381p+0,
    0x1.29e9df51fdee1p+0, 0x1.2b87fd0dad990p+0, 0x1.2d285a6e4030bp+0, 0x1.2ecafa93e2f56p+0,
    0x1.306fe0a31b715p+0, 0x1.32170fc4cd831p+0, 0x1.33c08b26416ffp+0, 0x1.356c55f929ff1p+0,
    0x1.371a7373aa9cbp+0, 0x1.38cae6d05d866p+0, 0x1.3a7db34e59ff7p+0, 0x1.3c32dc313a8e5p+0,
    0x1.3dea64c123422p+0, 0x1.3fa4504ac801cp+0, 0x1.4160a21f72e2ap+0, 0x1.431f5d950a897p+0,
    0x1.44e086061892dp+0, 0x1.46a41ed1d0057p+0, 0x1.486a2b5c13cd0p+0, 0x1.4a32af0d7d3dep+0,
    0x1.4bfdad5362a27p+0, 0x1.4dcb299fddd0dp+0, 0x1.4f9b2769d2ca7p+0, 0x1.516daa2cf6642p+0,
    0x1.5342b569d4f82p+0, 0x1.551a4ca5d920fp+0, 0x1.56f4736b527dap+0, 0x1.58d12d497c7fdp+0,
    0x1.5ab07dd485429p+0, 0x1.5c9268a5946b7p+0, 0x1.5e76f15ad2148p+0, 0x1.605e1b976dc09p+0,
    0x1.6247eb03a5585p+0, 0x1.6434634ccc320p+0, 0x1.6623882552225p+0, 0x1.68155d44ca973p+0,
    0x1.6a09e667f3bcdp+0, 0x1.6c012750bdabfp+0, 0x1.6dfb23c651a2fp+0, 0x1.6ff7df9519484p+0,
    0x1.71f75e8ec5f74p+0, 0x1.73f9a48a58174p+0, 0x1.75feb564267c9p+0, 0x1.780694fde5d3fp+0,
    0x1.7a11473eb0187p+0, 0x1.7c1ed0130c132p+0, 0x1.7e2f336cf4e62p+0, 0x1.80427543e1a12p+0,
    0x1.82589994cce13p+0, 0x1.8471a4623c7adp+0, 0x1.868d99b4492edp+0, 0x1.88ac7d98a6699p+0,
    0x1.8ace5422aa0dbp+0, 0x1.8cf3216b5448cp+0, 0x1.8f1ae99157736p+0, 0x1.9145b0b91ffc6p+0,
    0x1.93737b0cdc5e5p+0, 0x1.95a44cbc8520fp+0, 0x1.97d829fde4e50p+0, 0x1.9a0f170ca07bap+0,
    0x1.9c49182a3f090p+0, 0x1.9e86319e32323p+0, 0x1.a0c667b5de565p+0, 0x1.a309bec4a2d33p+0,
    0x1.a5503b23e255dp+0, 0x1.a799e1330b358p+0, 0x1.a9e6b5579fdbfp+0, 0x1.ac36bbfd3f37ap+0,
    0x1.ae89f995ad3adp+0, 0x1.b0e07298db666p+0, 0x1.b33a2b84f15fbp+0, 0x1.b59728de5593ap+0,
    0x1.b7f76f2fb5e47p+0, 0x1.ba5b030a1064ap+0, 0x1.bcc1e904bc1d2p+0, 0x1.bf2c25bd71e09p+0,
    0x1.c199bdd85529cp+0, 0x1.c40ab5fffd07ap+0, 0x1.c67f12e57d14bp+0, 0x1.c8f6d9406e7b5p+0,
    0x1.cb720dcef9069p+0, 0x1.cdf0b555dc3fap+0, 0x1.d072d4a07897cp+0, 0x1.d2f87080d89f2p+0,
    0x1.d5818dcfba487p+0, 0x1.d80e316c98398p+0, 0x1.da9e603db3285p+0, 0x1.dd321f301b460p+0,
    0x1.dfc97337b9b5fp+0, 0x1.e264614f5a129p+0, 0x1.e502ee78b3ff6p+0, 0x1.e7a51fbc74c83p+0,
    0x1.ea4afa2a490dap+0, 0x1.ecf482d8e67f1p+0, 0x1.efa1bee615a27p+0, 0x1.f252b376bba97p+0,
    0x1.f50765b6e4540p+0, 0x1.f7bfdad9cbe14p+0, 0x1.fa7c1819e90d8p+0, 0x1.fd3c22b8f71f1p+0};

// 2^(y/128) · 2^64 for y <= 0 (or NaN), that is exp(x) · 2^64 for y = 128 x / ln2, within 1 ulp (1.2 M random
// arguments against a long-double exp2; tests/cuda holds it to that), in 10 float64 operations and no branch
// (the library's exp has a slow path that costs a call and a divergence point per use): y = 128 e + j + r
// with |r| <= 1/2 (the nearest integer subtracted exactly), 2^(y/128) = 2^e · 2^(j/128) · exp(r ln2/128),
// the last by its Taylor polynomial of degree 5 in r (the coefficients carry the powers of ln2/128; the first
// omitted term is below 6e-19 relative). The factor 2^64 keeps every result normal down to 2^-1076 (about
// exp(-746)), so it rounds once; it cancels in the division by the row sum, and alpha takes it out exactly.
__device__ __forceinline__ double exp2_nonpos(double y, const double* table) {
  // 2^-1076 2^64 is below the row sum's last bit (the sum holds a 2^64); NaN stays NaN.
  y = y < -137728.0 ? -137728.0 : y;
  const double shifter = 0x1.8p52;
  const double t = y + shifter;  // y rounded to an integer k, in t's low bits
  const int k = __double2loint(t);
  const double kd = t - shifter;
  const double r = y - kd;  // exact
  double p = fma(r, 0x1.5d87fe78a6731p-45, 0x1.3b2ab6fba4e77p-35);  // (ln2/128)^i / i!
  p = fma(p, r, 0x1.c6b08d704a0c0p-26);
  p = fma(p, r, 0x1.ebfbdff82c58fp-17);
  p = fma(p, r, 0x1.62e42fefa39efp-8);
  const double pm1 = p * r;  // exp(r ln2/128) - 1: the table entry is added last, in one rounding
  const double entry = table[k & (kTable - 1)];
  const int exponent_step = static_cast<int>(static_cast<unsigned>((k >> 7) + 64) << 20);
  const double scaled = __hiloint2double(__double2hiint(entry) + exponent_step, __double2loint(entry));
  return fma(scaled, pm1, scaled);
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
    exact_flash(const double* __restrict__ q, const __grid_constant__ CUtensorMap kmap,
                const __grid_constant__ CUtensorMap vmap, double* __restrict__ out, long long S, int H, double scale) {
#ifndef TS_FLASH_ARCH
  __trap();
#else
  constexpr int ST = D + 2;  // K/V row stride
  extern __shared__ __align__(128) double smem[];
  double* Qs = smem;
  double* KV = Qs + kBQ * D;  // ring buffer i % 3 holds item i: K of tile i / 2 (even i), V (odd i)
  double* table = KV + kRing * kBK * ST;
  auto* full = reinterpret_cast<unsigned long long*>(table + kTable);  // one barrier per buffer
  auto* done = reinterpret_cast<unsigned*>(full + kRing);               // warps done with each buffer, ever
  constexpr int NT = D / 8;                                              // output tiles of 8 dims per warp
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, g = lane >> 2, c = lane & 3;
  const long long HD = static_cast<long long>(H) * D;
  const long long q0 = static_cast<long long>(blockIdx.x) * kBQ;
  const double* qh = q + static_cast<long long>(blockIdx.y) * D;
  const long long tiles = (S + kBK - 1) / kBK;
  const double sc = scale * 0x1.71547652b82fep+7;  // scores to units of ln2/128: scale · 128/ln2
  // Item i (K of tile i / 2 for even i, its V for odd i) into buffer i % kRing; one thread.
  constexpr unsigned kTileBytes = kBK * ST * sizeof(double);
  auto request = [&](long long item) {
    tile_copy(KV + (item % kRing) * kBK * ST, (item & 1) ? &vmap : &kmap, static_cast<int>(blockIdx.y) * D,
              static_cast<int>((item >> 1) * kBK), full + item % kRing, kTileBytes);
  };
  // A warp done with item i counts itself out of its buffer; the last one out asks for item i + kRing into
  // it, so no warp waits for the others except on data.
  auto release = [&](long long item) {
    __syncwarp();
    if (lane == 0) {
      __threadfence_block();
      const unsigned before = atomicAdd(done + item % kRing, 1u);
      __threadfence_block();
      if (before % kWarps == kWarps - 1 && item + kRing < 2 * tiles) request(item + kRing);
    }
  };
  for (int i = tid; i < kTable; i += kThreads) table[i] = kExp2Table[i];
  if (tid < kRing) {
    mbar_init(full + tid);
    done[tid] = 0;
  }
  load_q<D>(Qs, qh, q0, S, HD);
  cp_async_commit();
  __syncthreads();  // the barriers are set up
  if (tid == 0)
    for (long long i = 0; i < kRing && i < 2 * tiles; ++i) request(i);

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
  // every warp is done with the buffer it overwrites.
  cp_async_wait_all();  // Q (this thread's part)
  __syncthreads();      // ... and every thread's
  // The A operand of the first 16 head dims stays in registers for the whole key loop (8 of them: the kernel
  // then holds 249 registers; the other steps read theirs from shared memory each tile). Measured at block24,
  // side by side: 794 ms against 803 alone, the same bits; 791 against 802 with the exp in units of ln2/128.
  double a0[8];
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const double2 w = lds2(Qs + (qa ^ (2 * j)));
    a0[2 * j] = w.x;
    a0[2 * j + 1] = w.y;
  }
  for (long long t = 0; t < tiles; ++t) {
    const long long key0 = t * kBK;
    const int ks = static_cast<int>((2 * t) % kRing), vs = ks == kRing - 1 ? 0 : ks + 1;
    mbar_wait(full + ks, static_cast<unsigned>(((2 * t) / kRing) & 1));
    {
      const double* tile = KV + ks * kBK * ST;
#pragma unroll
      for (int n = 0; n < kBK / 8; ++n) {
#pragma unroll
        for (int x = 0; x < 4; ++x) s[n][x] = 0.0;
        const double2 lo = lds2(tile + kb + 8 * n * ST), hi = lds2(tile + kb + 8 * n * ST + 2);
        const double b[4] = {lo.x, lo.y, hi.x, hi.y};
        dmma(s[n], a0, b);
      }
      // Not unrolled: measured at block24, two steps at a time ran 2 % slower, the whole loop 4 % (255
      // registers, no room left to hide the loads).
#pragma unroll 1
      for (int kk = 16; kk < D; kk += 16) {
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
    // Online softmax on the registers, in units of ln2/128. Keys past the end weigh 2^-1076 2^64, below the
    // last bit of a row sum that holds a 2^64, against V rows of zeros.
    if (key0 + kBK > S) {
#pragma unroll
      for (int n = 0; n < kBK / 8; ++n)
#pragma unroll
        for (int x = 0; x < 4; ++x)
          if (key0 + 8 * n + 2 * c + (x & 1) >= S) s[n][x] = -INFINITY;
    }
    double alpha[2], m_new[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      double mx = -INFINITY;
#pragma unroll
      for (int n = 0; n < kBK / 8; ++n) mx = fmax(mx, fmax(s[n][2 * h], s[n][2 * h + 1]));
      mx = fmax(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
      mx = fmax(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
      // Rounding is monotonic, so the max of the scaled scores is the scaled max; finite: every
      // tile holds a key.
      m_new[h] = fmax(m[h], mx * sc);
    }
    // The max of a row seldom moves after the first tiles; when no row of the warp moved, every alpha is 1.
    const bool moved = __any_sync(0xffffffffu, m_new[0] != m[0] || m_new[1] != m[1]);
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      alpha[h] = moved ? exp2_nonpos(m[h] - m_new[h], table) * 0x1p-64 : 1.0;
      m[h] = m_new[h];
      double sum = 0.0;
#pragma unroll
      for (int n = 0; n < kBK / 8; ++n)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const double pe = exp2_nonpos(fma(s[n][2 * h + e], sc, -m_new[h]), table);
          s[n][2 * h + e] = pe;
          sum += pe;
        }
      l[h] = l[h] * alpha[h] + sum;
    }
    // Skip the rescale when no row of the warp moved.
    if (moved && !__all_sync(0xffffffffu, alpha[0] == 1.0 && alpha[1] == 1.0)) {
#pragma unroll
      for (int j = 0; j < NT; ++j) {
        o[j][0] *= alpha[0];
        o[j][1] *= alpha[0];
        o[j][2] *= alpha[1];
        o[j][3] *= alpha[1];
      }
    }
    release(2 * t);
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
    release(2 * t + 1);
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

// The copy engine's view of a [S, H, D] array: rows of H·D doubles, read kBK rows by D + 2 columns.
cudaError_t tile_map(CUtensorMap* map, const double* base, long long S, long long H, int D) {
  static PFN_cuTensorMapEncodeTiled_v12000 encode = [] {
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult found{};
    return cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &found) ==
                       cudaSuccess &&
                   found == cudaDriverEntryPointSuccess
               ? reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(fn)
               : nullptr;
  }();
  if (encode == nullptr) return cudaErrorNotSupported;
  const cuuint64_t dims[2] = {static_cast<cuuint64_t>(H * D), static_cast<cuuint64_t>(S)};
  const cuuint64_t strides[1] = {static_cast<cuuint64_t>(H * D) * sizeof(double)};
  const cuuint32_t box[2] = {static_cast<cuuint32_t>(D + 2), kBK}, unit[2] = {1, 1};
  return encode(map, CU_TENSOR_MAP_DATA_TYPE_FLOAT64, 2, const_cast<double*>(base), dims, strides, box, unit,
                CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS
             ? cudaSuccess
             : cudaErrorInvalidValue;
}

__global__ void exp_probe(const double* __restrict__ y, double* __restrict__ out, long long n) {
#ifndef TS_FLASH_ARCH
  __trap();
#else
  __shared__ double table[kTable];
  for (int i = threadIdx.x; i < kTable; i += blockDim.x) table[i] = kExp2Table[i];
  __syncthreads();
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<long long>(gridDim.x) * blockDim.x)
    out[i] = exp2_nonpos(y[i], table);
#endif
}

template <int D>
cudaError_t launch(const double* q, const double* k, const double* v, double* out, long long S, long long H,
                   double scale) {
  // The copy engine's coordinates are 32-bit.
  if (S > 0x7fffffff || H * D > 0x7fffffff) return cudaErrorInvalidValue;
  CUtensorMap kmap, vmap;
  cudaError_t m = tile_map(&kmap, k, S, H, D);
  if (m == cudaSuccess) m = tile_map(&vmap, v, S, H, D);
  if (m != cudaSuccess) return m;
  constexpr size_t bytes = smem_bytes<D>();
  cudaError_t e = cudaFuncSetAttribute(exact_flash<D>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                       static_cast<int>(bytes));
  if (e != cudaSuccess) return e;
  const dim3 grid(static_cast<unsigned>((S + kBQ - 1) / kBQ), static_cast<unsigned>(H));
  exact_flash<D><<<grid, kThreads, bytes>>>(q, kmap, vmap, out, S, static_cast<int>(H), scale);
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

std::string exact_flash_exp(const double* y, double* out, long long n) {
  const size_t bytes = static_cast<size_t>(n) * sizeof(double);
  double* d = nullptr;
  std::string failed;
  const auto check = [&](const char* what, cudaError_t e) {
    if (e != cudaSuccess && failed.empty()) failed = std::string(what) + ": " + cudaGetErrorString(e);
    return failed.empty();
  };
  if (check("cudaMalloc", cudaMalloc(&d, 2 * bytes)) &&
      check("copy in", cudaMemcpy(d, y, bytes, cudaMemcpyHostToDevice))) {
    exp_probe<<<256, 256>>>(d, d + n, n);
    if (check("exp launch", cudaGetLastError()))
      check("copy out", cudaMemcpy(out, d + n, bytes, cudaMemcpyDeviceToHost));
  }
  cudaFree(d);
  return failed;
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
