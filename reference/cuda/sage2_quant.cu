// reference/sage2_quant.cpp on the device (see sage2_quant.cuh). Sums keep the host's order
// (one thread per sum, tokens in order); maxima are exact in any order, so they are reduced
// across threads.
#include "reference/cuda/sage2_quant.cuh"

#include <algorithm>

#include "reference/cuda/device_buffer.cuh"
#include "reference/cuda/staged_copy.cuh"
#include "reference/numerics/convert.hpp"
#include "reference/sage2_recipe.hpp"

namespace ts::cuda::sage2 {
namespace {

__constant__ uint32_t kRcpBf16[128] = {TS_SAGE2_RCP_BF16_TABLE};
__device__ float gpu_rcp(float x) { return ts::sage2::gpu_rcp_from(x, kRcpBf16); }

constexpr int kThreads = 256;

unsigned blocks_for(long long n) {
  return static_cast<unsigned>(std::min<long long>((n + kThreads - 1) / kThreads, 1 << 20));
}

__device__ float widen(const void* in, Stored type, long long i) {
  switch (type) {
    case Stored::bf16: return num::bf16_from_bits(static_cast<const uint16_t*>(in)[i]);
    case Stored::f16: return num::fp16_from_bits(static_cast<const uint16_t*>(in)[i]);
    default: return static_cast<const float*>(in)[i];
  }
}

__device__ float round_to(float x, Round r) {
  switch (r) {
    case Round::bf16: return num::bf16_round(x);
    case Round::f16: return num::fp16_round(x);
    default: return x;
  }
}

__global__ void head_major_kernel(const void* in, Stored type, long long S, long long H, long long D, float* out) {
  const long long n = S * H * D;
  for (long long o = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; o < n;
       o += static_cast<long long>(gridDim.x) * blockDim.x) {
    const long long d = o % D, s = (o / D) % S, h = o / (S * D);
    out[o] = widen(in, type, (s * H + h) * D + d);
  }
}

// One thread per (h, d), tokens in order.
__global__ void smoothing_mean_kernel(const float* k, long long S, long long H, long long D, float inv_n, Round r,
                                      float* km) {
  const long long t = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (t >= H * D) return;
  const long long h = t / D, d = t % D;
  const float* x = k + h * S * D + d;
  float sum = 0.0f;
#pragma unroll 8
  for (long long s = 0; s < S; ++s) sum += x[s * D];
  km[t] = round_to(sum * inv_n, r);
}

__global__ void subtract_mean_kernel(const float* x, const float* km, long long S, long long H, long long D,
                                     bool per_thread, Round r, float* y) {
  const long long n = S * H * D;
  for (long long o = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; o < n;
       o += static_cast<long long>(gridDim.x) * blockDim.x) {
    const long long d = o % D, h = o / (S * D);
    const float diff = x[o] - km[h * D + d];
    y[o] = per_thread ? round_to(diff, r) : diff;
  }
}

__device__ float block_max(float v, float* red) {
  red[threadIdx.x] = v;
  __syncthreads();
  for (int w = blockDim.x / 2; w > 0; w /= 2) {
    if (threadIdx.x < w) red[threadIdx.x] = fmaxf(red[threadIdx.x], red[threadIdx.x + w]);
    __syncthreads();
  }
  return red[0];
}

// One block per (group g, head h): the group's amax, then its scale and multiplier as the host's
// quantize_int8 forms them.
__global__ void int8_group_kernel(const float* x, long long S, long long D, ScaleLayout l, long long groups,
                                  float* scale_g, float* mult_g) {
  __shared__ float red[kThreads];
  const long long g = blockIdx.x, h = blockIdx.y;
  int64_t first = 0, last = 0;
  ts::sage2::scale_group_range(l.per_thread, l.query, l.blk, l.warp, g, &first, &last);
  last = min(last, static_cast<int64_t>(S));
  float amax = ts::sage2::amax_start(l.per_thread);
  for (long long e = threadIdx.x; e < (last - first) * D; e += blockDim.x) {
    const long long s = first + e / D;
    if (ts::sage2::scale_index(l.per_thread, l.query, l.blk, l.warp, s) != g) continue;
    amax = fmaxf(amax, fabsf(x[(h * S + s) * D + e % D]));
  }
  amax = block_max(amax, red);
  if (threadIdx.x != 0) return;
  const float scale = l.per_thread ? ts::sage2::thread_scale(amax) : ts::sage2::warp_scale(amax, kRcpBf16);
  scale_g[h * groups + g] = scale;
  mult_g[h * groups + g] = l.per_thread ? gpu_rcp(scale) : ts::sage2::warp_mult(amax, kRcpBf16);
}

__global__ void int8_code_kernel(const float* x, long long S, long long H, long long D, ScaleLayout l,
                                 long long groups, const float* scale_g, const float* mult_g, int8_t* codes,
                                 float* scale_tok) {
  const long long n = S * H * D;
  for (long long o = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; o < n;
       o += static_cast<long long>(gridDim.x) * blockDim.x) {
    const long long d = o % D, s = (o / D) % S, h = o / (S * D);
    const long long g = h * groups + ts::sage2::scale_index(l.per_thread, l.query, l.blk, l.warp, s);
    codes[o] = ts::sage2::int8_code(l.per_thread, x[o], mult_g[g]);
    if (d == 0) scale_tok[h * S + s] = scale_g[g];
  }
}

// Block (32 channels, 8 token rows) per (channel group, head): each channel's amax over every
// token, then its scale and multiplier (0 for an all-zero channel).
__global__ void fp8_channel_kernel(const float* v, long long S, long long D, float scale_max, float* scales,
                                   float* mult, unsigned long long* zero_channels) {
  __shared__ float red[8][33];
  const long long h = blockIdx.y, d = blockIdx.x * 32LL + threadIdx.x;
  float amax = 0.0f;
  if (d < D)
    for (long long s = threadIdx.y; s < S; s += 8) amax = fmaxf(amax, fabsf(v[(h * S + s) * D + d]));
  red[threadIdx.y][threadIdx.x] = amax;
  __syncthreads();
  if (threadIdx.y != 0 || d >= D) return;
  for (int y = 1; y < 8; ++y) amax = fmaxf(amax, red[y][threadIdx.x]);
  if (amax == 0.0f) {
    scales[h * D + d] = 0.0f;
    mult[h * D + d] = 0.0f;
    atomicAdd(zero_channels, 1ULL);
    return;
  }
  scales[h * D + d] = amax * gpu_rcp(scale_max);
  mult[h * D + d] = scale_max * gpu_rcp(amax);
}

__global__ void fp8_value_kernel(const float* v, long long S, long long H, long long D, const float* scales,
                                 const float* mult, float* values) {
  const long long n = S * H * D;
  for (long long o = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; o < n;
       o += static_cast<long long>(gridDim.x) * blockDim.x) {
    const long long c = (o / (S * D)) * D + o % D;
    values[o] = scales[c] == 0.0f ? 0.0f : num::e4m3_decode(num::e4m3_encode(v[o] * mult[c]));
  }
}

template <class T>
struct Scratch {
  T* p = nullptr;
  cudaError_t err;
  explicit Scratch(size_t n) { err = cudaMalloc(&p, std::max<size_t>(n, 1) * sizeof(T)); }
  ~Scratch() { cudaFree(p); }
};

}  // namespace

cudaError_t to_head_major(const void* in, Stored type, long long S, long long H, long long D, float* out) {
  head_major_kernel<<<blocks_for(S * H * D), kThreads>>>(in, type, S, H, D, out);
  return cudaGetLastError();
}

cudaError_t inputs_head_major(const StoredInput& q, const StoredInput& k, const StoredInput& v, long long S,
                              long long H, long long D, float* qf, float* kf, float* vf, double* upload_ms,
                              const char** what) {
  const auto t0 = Clock::now();
  const size_t n = static_cast<size_t>(S * H * D);
  const size_t qb = n * stored_input_bytes(q.type), kb = n * stored_input_bytes(k.type),
               vb = n * stored_input_bytes(v.type);
  DeviceBuffer<unsigned char> raw(qb + kb + vb);
  cudaError_t e;
  if ((e = raw.err) != cudaSuccess) return *what = "input buffer", e;
  if ((e = copy_input_to_device(raw.p, q)) != cudaSuccess) return *what = "upload q", e;
  if ((e = copy_input_to_device(raw.p + qb, k)) != cudaSuccess) return *what = "upload k", e;
  if ((e = copy_input_to_device(raw.p + qb + kb, v)) != cudaSuccess) return *what = "upload v", e;
  *upload_ms = ms_since(t0);
  if ((e = to_head_major(raw.p, static_cast<Stored>(q.type), S, H, D, qf)) != cudaSuccess) return *what = "q head-major", e;
  if ((e = to_head_major(raw.p + qb, static_cast<Stored>(k.type), S, H, D, kf)) != cudaSuccess)
    return *what = "k head-major", e;
  if ((e = to_head_major(raw.p + qb + kb, static_cast<Stored>(v.type), S, H, D, vf)) != cudaSuccess)
    return *what = "v head-major", e;
  // The scratch is freed on return: the widening must be done with it first.
  if ((e = cudaDeviceSynchronize()) != cudaSuccess) return *what = "inputs head-major", e;
  return cudaSuccess;
}

cudaError_t smoothing_mean(const float* k, long long S, long long H, long long D, float inv_n, Round round,
                           float* km) {
  smoothing_mean_kernel<<<blocks_for(H * D), kThreads>>>(k, S, H, D, inv_n, round, km);
  return cudaGetLastError();
}

cudaError_t subtract_mean(const float* x, const float* km, long long S, long long H, long long D, bool per_thread,
                          Round round, float* y) {
  subtract_mean_kernel<<<blocks_for(S * H * D), kThreads>>>(x, km, S, H, D, per_thread, round, y);
  return cudaGetLastError();
}

cudaError_t quantize_int8(const float* x, long long S, long long H, long long D, const ScaleLayout& layout,
                          int8_t* codes, float* scale_tok) {
  if (S == 0) return cudaSuccess;
  // Padded groups past the last token keep the recipe's start; no token reads them.
  const long long groups = ts::sage2::scale_count(layout.per_thread, layout.query, layout.blk, layout.warp, S);
  Scratch<float> scale_g(static_cast<size_t>(H * groups)), mult_g(static_cast<size_t>(H * groups));
  if (scale_g.err != cudaSuccess) return scale_g.err;
  if (mult_g.err != cudaSuccess) return mult_g.err;
  int8_group_kernel<<<dim3(static_cast<unsigned>(groups), static_cast<unsigned>(H)), kThreads>>>(
      x, S, D, layout, groups, scale_g.p, mult_g.p);
  if (const cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
  int8_code_kernel<<<blocks_for(S * H * D), kThreads>>>(x, S, H, D, layout, groups, scale_g.p, mult_g.p, codes,
                                                        scale_tok);
  if (const cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
  return cudaDeviceSynchronize();  // before the scratch goes
}

cudaError_t quantize_v_fp8(const float* v, long long S, long long H, long long D, float scale_max, float* values,
                           float* scales, long long* zero_channels) {
  Scratch<float> mult(static_cast<size_t>(H * D));
  Scratch<unsigned long long> zeros(1);
  if (mult.err != cudaSuccess) return mult.err;
  if (zeros.err != cudaSuccess) return zeros.err;
  cudaError_t e;
  if ((e = cudaMemset(zeros.p, 0, sizeof(unsigned long long))) != cudaSuccess) return e;
  fp8_channel_kernel<<<dim3(static_cast<unsigned>((D + 31) / 32), static_cast<unsigned>(H)), dim3(32, 8)>>>(
      v, S, D, scale_max, scales, mult.p, zeros.p);
  if ((e = cudaGetLastError()) != cudaSuccess) return e;
  fp8_value_kernel<<<blocks_for(S * H * D), kThreads>>>(v, S, H, D, scales, mult.p, values);
  if ((e = cudaGetLastError()) != cudaSuccess) return e;
  unsigned long long z = 0;
  if ((e = cudaMemcpy(&z, zeros.p, sizeof z, cudaMemcpyDeviceToHost)) != cudaSuccess) return e;
  *zero_channels = static_cast<long long>(z);
  return cudaSuccess;
}

}  // namespace ts::cuda::sage2
