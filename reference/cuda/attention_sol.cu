// The sol emulation's attention part on the device (see attention_sol.hpp).
// One block per (query block, head), as one task of the host's loop. The
// host's softmax takes the maximum over every logit of a row before any exp,
// so the block runs twice over its keys: pass 0 computes the logits and the
// row maxima, pass 1 recomputes the same logits, exponentiates them, sums the
// denominator one row per thread in the host's key order (real keys in token
// order, then pseudo-keys) and accumulates P·V. Keys come in chunks: each
// attended key block (routed video, every conditioning block), then the
// unrouted video blocks' pseudo-keys, block_k at a time.
#include <cuda_runtime.h>

#include <algorithm>
#include <memory>
#include <string>

#include "reference/cuda/device_buffer.cuh"
#include "reference/cuda/staged_copy.cuh"
#include "reference/cuda/sol_device_inputs.cuh"
#include "reference/cuda/sol_kernel.hpp"
#include "reference/numerics/convert.hpp"
#include "reference/sol_arith.hpp"

namespace ts::cuda {
namespace {

constexpr int kThreads = 256;

struct Args {
  SolDeviceProblem p;  // device pointers
  float* acc;          // [S][H][D], zeroed: the running output
  float* out;          // [S][H][D]
};

struct Tiles {
  float* q;      // [block_q][D+1]
  float* kv;     // [block_k][D+1]: keys, then values
  float* s;      // [block_q][block_k+1]: logits, then P
  float* m;      // [block_q] row max
  float* den;    // [block_q]
  float* pscale; // [block_q]
  int* pseudo;   // [block_k]: video indices of this pseudo-key chunk
  int* count;    // [1]
};

// Register tiles: each thread computes kTR rows x kTC columns of logits (keys)
// or kTR x kTD of the output (channels); element (i, j) of tile (rg, cg) is
// row rg + RG*i, column cg + CG*j, so a warp's threads read distinct banks. Every element keeps the arithmetic and summation order of one
// sequential loop (the host's order), so tiling changes no bit.
constexpr int kTR = 4, kTC = 8, kTD = 4;

// q tile: the int8 codes (real keys of the int8 variants) or the float q.
__device__ void load_q(const Args& a, const Tiles& t, long long h, long long q0, int nr, bool codes) {
  const int D = static_cast<int>(a.p.D);
  const long long base = (h * a.p.S + q0) * D;
  for (int e = threadIdx.x; e < nr * D; e += blockDim.x) {
    const int r = e / D, d = e - r * D;
    t.q[r * (D + 1) + d] = codes ? static_cast<float>(a.p.q8[base + e]) : a.p.q[base + e];
  }
}

// Logits of the nr query rows against the len keys in t.kv (sequential dot in d).
// real: the key tile holds tokens start.. (int8: codes, scaled as the host);
// otherwise pseudo-keys, offset by ln(n_j).
__device__ void logits(const Args& a, const Tiles& t, long long h, long long q0, int nr, int len,
                       long long start, bool real) {
  const long long S = a.p.S;
  const int D = static_cast<int>(a.p.D);
  const int ld = a.p.block_k + 1;
  const bool int8 = a.p.precision != 0;
  const int RG = (nr + kTR - 1) / kTR, CG = (len + kTC - 1) / kTC;
  for (int w = threadIdx.x; w < RG * CG; w += blockDim.x) {
    const int rg = w / CG, cg = w - rg * CG;
    int qr[kTR], kr[kTC];
#pragma unroll
    for (int i = 0; i < kTR; ++i) qr[i] = min(rg + RG * i, nr - 1) * (D + 1);
#pragma unroll
    for (int j = 0; j < kTC; ++j) kr[j] = min(cg + CG * j, len - 1) * (D + 1);
    float dot[kTR][kTC];
#pragma unroll
    for (int i = 0; i < kTR; ++i)
#pragma unroll
      for (int j = 0; j < kTC; ++j) dot[i][j] = 0.0f;
    for (int d = 0; d < D; ++d) {
      float qv[kTR], kv[kTC];
#pragma unroll
      for (int i = 0; i < kTR; ++i) qv[i] = t.q[qr[i] + d];
#pragma unroll
      for (int j = 0; j < kTC; ++j) kv[j] = t.kv[kr[j] + d];
#pragma unroll
      for (int i = 0; i < kTR; ++i)
#pragma unroll
        for (int j = 0; j < kTC; ++j) dot[i][j] += qv[i] * kv[j];
    }
#pragma unroll
    for (int i = 0; i < kTR; ++i) {
      const int r = rg + RG * i;
      if (r >= nr) continue;
#pragma unroll
      for (int j = 0; j < kTC; ++j) {
        const int c = cg + CG * j;
        if (c >= len) continue;
        float s;
        if (!real) {
          s = dot[i][j] * a.p.scale + a.p.ln_n[t.pseudo[c]];
        } else if (int8) {
          s = (dot[i][j] * (a.p.q_scale[h * S + q0 + r] * a.p.k_scale[h * S + start + c])) * a.p.scale;
        } else {
          s = dot[i][j] * a.p.scale;
        }
        t.s[r * ld + c] = s;
      }
    }
  }
}

// Pass 1 of a chunk, after its logits: P = exp(s - m) by every thread, then
// the denominator in key order, one thread per row; int8_qk_pv then
// quantises P per (row, block).
__device__ void exponentiate(const Args& a, const Tiles& t, int nr, int len, bool quantise) {
  const int ld = a.p.block_k + 1;
  for (int e = threadIdx.x; e < nr * len; e += blockDim.x) {
    const int r = e / len, j = e - r * len;
    t.s[r * ld + j] = sol::expf_det(t.s[r * ld + j] - t.m[r]);
  }
  __syncthreads();
  for (int r = threadIdx.x; r < nr; r += blockDim.x) {
    float* row = t.s + r * ld;
    float l = t.den[r];
    for (int j = 0; j < len; ++j) l += row[j];
    t.den[r] = l;
    if (quantise) {
      float amax = 1e-7f;
      for (int j = 0; j < len; ++j) amax = amax < row[j] ? row[j] : amax;  // std::max
      const float mult = 127.0f / amax;
      t.pscale[r] = amax / 127.0f;
      for (int j = 0; j < len; ++j) row[j] = static_cast<float>(num::int8_rni_sat(row[j] * mult));
    }
  }
}

__device__ void row_max(const Args& a, const Tiles& t, int nr, int len) {
  const int ld = a.p.block_k + 1;
  for (int r = threadIdx.x; r < nr; r += blockDim.x) {
    const float* row = t.s + r * ld;
    float m = t.m[r];
    for (int j = 0; j < len; ++j) m = m < row[j] ? row[j] : m;  // std::max's rule
    t.m[r] = m;
  }
}

// acc rows += P · (the values in t.kv); int8 codes: the exact integer sum,
// dequantised as the host does, block scale v8_scale[h][block].
__device__ void accumulate(const Args& a, const Tiles& t, long long h, long long q0, int nr, int len,
                           long long block, bool codes) {
  const long long H = a.p.H;
  const int D = static_cast<int>(a.p.D);
  const int ld = a.p.block_k + 1;
  const int RG = (nr + kTR - 1) / kTR, CG = (D + kTD - 1) / kTD;
  for (int w = threadIdx.x; w < RG * CG; w += blockDim.x) {
    const int rg = w / CG, cg = w - rg * CG;
    int pr[kTR], col[kTD];
#pragma unroll
    for (int i = 0; i < kTR; ++i) pr[i] = min(rg + RG * i, nr - 1) * ld;
#pragma unroll
    for (int k = 0; k < kTD; ++k) col[k] = min(cg + CG * k, D - 1);
    float sum[kTR][kTD];
#pragma unroll
    for (int i = 0; i < kTR; ++i)
#pragma unroll
      for (int k = 0; k < kTD; ++k)
        sum[i][k] = codes ? 0.0f : a.acc[((q0 + min(rg + RG * i, nr - 1)) * H + h) * D + col[k]];
    for (int j = 0; j < len; ++j) {
      float pv[kTR], vv[kTD];
#pragma unroll
      for (int i = 0; i < kTR; ++i) pv[i] = t.s[pr[i] + j];
#pragma unroll
      for (int k = 0; k < kTD; ++k) vv[k] = t.kv[j * (D + 1) + col[k]];
#pragma unroll
      for (int i = 0; i < kTR; ++i)
#pragma unroll
        for (int k = 0; k < kTD; ++k) sum[i][k] += pv[i] * vv[k];
    }
#pragma unroll
    for (int i = 0; i < kTR; ++i) {
      const int r = rg + RG * i;
      if (r >= nr) continue;
#pragma unroll
      for (int k = 0; k < kTD; ++k) {
        const int d = cg + CG * k;
        if (d >= D) continue;
        float* acc = a.acc + ((q0 + r) * H + h) * D + d;
        if (codes)
          *acc += (sum[i][k] * t.pscale[r]) * a.p.v8_scale[(h * a.p.NB + block) * D + d];
        else
          *acc = sum[i][k];
      }
    }
  }
}

__global__ void sol_tile_kernel(Args a) {
  extern __shared__ float smem[];
  const long long S = a.p.S, H = a.p.H, D = a.p.D, VB = a.p.VB, h = blockIdx.y, i = blockIdx.x;
  const int bq = a.p.block_q, bk = a.p.block_k, Di = static_cast<int>(D);
  Tiles t;
  t.q = smem;
  t.kv = t.q + bq * (D + 1);
  t.s = t.kv + bk * (D + 1);
  t.m = t.s + bq * (bk + 1);
  t.den = t.m + bq;
  t.pscale = t.den + bq;
  t.pseudo = reinterpret_cast<int*>(t.pscale + bq);
  t.count = t.pseudo + bk;
  const long long q0 = i * bq;
  const int nr = static_cast<int>(min(static_cast<long long>(bq), S - q0));
  const uint8_t* mask = a.p.mask + (h * a.p.QB + i) * VB;
  const bool int8 = a.p.precision != 0, pv8 = a.p.precision == 2;
  for (int r = threadIdx.x; r < nr; r += blockDim.x) {
    t.m[r] = -INFINITY;
    t.den[r] = 0.0f;
  }
  for (int pass = 0; pass < 2; ++pass) {
    __syncthreads();
    load_q(a, t, h, q0, nr, int8);
    // Real keys: attended blocks in token order.
    for (long long b = 0; b < a.p.NB; ++b) {
      const long long start = a.p.blocks[b * 3], vidx = a.p.blocks[b * 3 + 2];
      const int len = static_cast<int>(a.p.blocks[b * 3 + 1]);
      if (vidx >= 0 && !mask[vidx]) continue;
      __syncthreads();
      const long long base = (h * S + start) * D;
      for (int e = threadIdx.x; e < len * Di; e += blockDim.x) {
        const int j = e / Di, d = e - j * Di;
        t.kv[j * (Di + 1) + d] = int8 ? static_cast<float>(a.p.k8[base + e]) : a.p.k[base + e];
      }
      __syncthreads();
      logits(a, t, h, q0, nr, len, start, true);
      __syncthreads();
      if (pass == 0) {
        row_max(a, t, nr, len);
        continue;
      }
      exponentiate(a, t, nr, len, pv8);
      for (int e = threadIdx.x; e < len * Di; e += blockDim.x) {
        const int j = e / Di, d = e - j * Di;
        t.kv[j * (Di + 1) + d] = pv8 ? static_cast<float>(a.p.v8[base + e]) : a.p.v[base + e];
      }
      __syncthreads();
      accumulate(a, t, h, q0, nr, len, b, pv8);
    }
    if (!a.p.compensation) continue;
    // Pseudo-keys of the unrouted video blocks, in video-block order; the
    // float q (the host's pseudo-key logits use the unquantised q).
    __syncthreads();
    if (int8) load_q(a, t, h, q0, nr, false);
    for (long long j0 = 0; j0 < VB;) {
      __syncthreads();
      if (threadIdx.x == 0) {
        int n = 0;
        for (; j0 < VB && n < bk; ++j0)
          if (!mask[j0]) t.pseudo[n++] = static_cast<int>(j0);
        *t.count = n;
      } else {
        // Every thread advances its own j0 the same way.
        int n = 0;
        for (; j0 < VB && n < bk; ++j0)
          if (!mask[j0]) ++n;
      }
      __syncthreads();
      const int len = *t.count;
      if (len == 0) break;
      for (int e = threadIdx.x; e < len * Di; e += blockDim.x) {
        const int u = e / Di, d = e - u * Di;
        t.kv[u * (Di + 1) + d] = a.p.pseudo_k[(h * VB + t.pseudo[u]) * D + d];
      }
      __syncthreads();
      logits(a, t, h, q0, nr, len, 0, false);
      __syncthreads();
      if (pass == 0) {
        row_max(a, t, nr, len);
        continue;
      }
      exponentiate(a, t, nr, len, false);
      for (int e = threadIdx.x; e < len * Di; e += blockDim.x) {
        const int u = e / Di, d = e - u * Di;
        t.kv[u * (Di + 1) + d] = a.p.vbar[(h * VB + t.pseudo[u]) * D + d];
      }
      __syncthreads();
      accumulate(a, t, h, q0, nr, len, 0, false);
    }
  }
  __syncthreads();
  for (long long e = threadIdx.x; e < nr * D; e += blockDim.x) {
    const int r = static_cast<int>(e / D);
    const long long x = ((q0 + r) * H + h) * D + e % D;
    a.out[x] = a.acc[x] / t.den[r];
  }
}

}  // namespace

std::string make_device_context() {
  const cudaError_t e = cudaFree(nullptr);
  return e == cudaSuccess ? std::string() : cuda_failure("device context", e);
}

long long sol_shared_bytes(long long block_q, long long block_k, long long D) {
  return (block_q * (D + 1) + block_k * (D + 1) + block_q * (block_k + 1) + 3 * block_q) * 4 + block_k * 4 + 4;
}

std::string sol_attention_device(SolDeviceInputs& in, const uint8_t* mask, int compensation, const float** out,
                                 double* device_ms, void (*while_running)(void*), void* ctx) {
  const SolDeviceProblem& p = in.p;
  const size_t n = in.n;
  cudaError_t e;
  if ((e = cudaMemcpy(in.mask.p, mask, static_cast<size_t>(p.H * p.QB * p.VB), cudaMemcpyHostToDevice)) !=
      cudaSuccess)
    return cuda_failure("upload mask", e);
  if ((e = cudaMemset(in.acc.p, 0, n * 4)) != cudaSuccess) return cuda_failure("zero acc", e);
  // Poison the output so a kernel that writes nothing cannot pass.
  if ((e = cudaMemset(in.out.p, 0xFF, n * 4)) != cudaSuccess) return cuda_failure("poison output", e);
  const long long smem = sol_shared_bytes(p.block_q, p.block_k, p.D);
  if ((e = cudaFuncSetAttribute(sol_tile_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                static_cast<int>(smem))) != cudaSuccess)
    return cuda_failure("shared memory size", e);
  Args args{p, in.acc.p, in.out.p};
  args.p.compensation = compensation;
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  const dim3 grid(static_cast<unsigned>(p.QB), static_cast<unsigned>(p.H));
  cudaEventRecord(start);
  sol_tile_kernel<<<grid, kThreads, static_cast<size_t>(smem)>>>(args);
  e = cudaGetLastError();
  cudaEventRecord(stop);
  cudaError_t pinned = cudaSuccess;
  if (e == cudaSuccess && !in.host_out)
    pinned = cudaMallocHost(&in.host_out, std::max<size_t>(n, 1) * sizeof(float));
  if (e == cudaSuccess && while_running) while_running(ctx);
  if (e == cudaSuccess) e = cudaEventSynchronize(stop);
  float ms = 0;
  if (e == cudaSuccess) e = cudaEventElapsedTime(&ms, start, stop);
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  if (e != cudaSuccess) return cuda_failure("sol kernel", e);
  if (pinned != cudaSuccess) {
    in.host_out = nullptr;
    return cuda_failure("pinned output buffer", pinned);
  }
  if (device_ms) *device_ms = ms;
  if ((e = cudaMemcpy(in.host_out, in.out.p, n * 4, cudaMemcpyDeviceToHost)) != cudaSuccess)
    return cuda_failure("copy out", e);
  *out = in.host_out;
  return {};
}

}  // namespace ts::cuda
