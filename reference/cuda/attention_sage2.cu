// The sage2 emulation's O(S²) part on the device (see attention_sage2.hpp): the
// dispatcher and the simt kernel (kernel=simt); the tensor-core kernel is
// sage2_tc.cu. The simt kernel follows reference/attention_sage2.cpp step for
// step with the same functions (reference/sage2_arith.hpp,
// numerics/convert.hpp), built with -fmad=false, so it gives the host's bits:
//   - scores are exact int32 dot products (dp4a), then the same two float32
//     multiplications;
//   - each row's softmax runs in one thread, keys in order, as on the host;
//   - every 32-key P·V partial sum is exact in float64 (E4M3 × E4M3 products,
//     < 45 bits), so its summation order does not matter; the accumulation
//     modes then round exactly as the host does.
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <string>

#include "reference/cuda/device_buffer.cuh"
#include "reference/cuda/sage2_quant.cuh"
#include "reference/cuda/staged_copy.cuh"
#include "reference/cuda/sage2_kernel.hpp"
#include "reference/cuda/sage2_tc.cuh"
#include "reference/numerics/convert.hpp"
#include "reference/sage2_arith.hpp"

namespace ts::cuda {
namespace {

constexpr int kThreads = 256;

struct Args {
  long long S, H, D;
  int blkq, kb, accum;
  float sm_scale;
  const int8_t *q8, *k8;
  const float *qs, *ks, *v, *vs;
  float* acc;  // [S][H][D], zeroed; the running output
  float* out;  // [S][H][D]
};

__device__ int dot_int8(const int8_t* a, const int8_t* b, long long D) {
  int dot = 0;
  if ((D & 3) == 0) {  // rows start at multiples of D, so 4-byte aligned
    const int* a4 = reinterpret_cast<const int*>(a);
    const int* b4 = reinterpret_cast<const int*>(b);
    for (long long i = 0; i < D / 4; ++i) dot = __dp4a(a4[i], b4[i], dot);
  } else {
    for (long long i = 0; i < D; ++i) dot += int(a[i]) * int(b[i]);
  }
  return dot;
}

// One (query tile, head) per block, as one task of the host's loop.
__global__ void sage2_tile_kernel(Args a) {
  extern __shared__ float smem[];
  float* sc = smem;                   // [blkq][kb]: scores, then P8
  float* m = sc + a.blkq * a.kb;      // [blkq] running max
  float* den = m + a.blkq;            // [blkq] denominator
  float* osc = den + a.blkq;          // [blkq] this key block's rescale
  const long long S = a.S, H = a.H, D = a.D, h = blockIdx.y;
  const long long r0 = static_cast<long long>(blockIdx.x) * a.blkq;
  const int nr = static_cast<int>(min(static_cast<long long>(a.blkq), S - r0));
  const int8_t* qh = a.q8 + h * S * D;
  const int8_t* kh = a.k8 + h * S * D;
  const float* vh = a.v + h * S * D;
  const float* qs = a.qs + h * S;
  const float* ks = a.ks + h * S;
  for (int r = threadIdx.x; r < nr; r += blockDim.x) {
    m[r] = ts::sage2::kInitialMax;
    den[r] = 0.0f;
  }
  for (long long k0 = 0; k0 < S; k0 += a.kb) {
    const int nk = static_cast<int>(min(static_cast<long long>(a.kb), S - k0));
    __syncthreads();
    for (int e = threadIdx.x; e < nr * nk; e += blockDim.x) {
      const int r = e / nk, j = e % nk;
      const int dot = dot_int8(qh + (r0 + r) * D, kh + (k0 + j) * D, D);
      sc[r * a.kb + j] = (static_cast<float>(dot) * (qs[r0 + r] * ks[k0 + j])) * a.sm_scale;
    }
    __syncthreads();
    for (int r = threadIdx.x; r < nr; r += blockDim.x) {
      float* row = sc + r * a.kb;
      osc[r] = ts::sage2::softmax_step(row, row, nk, m[r], den[r], true);
    }
    __syncthreads();
    for (long long e = threadIdx.x; e < nr * D; e += blockDim.x) {
      const int r = static_cast<int>(e / D);
      const long long d = e % D;
      float* acc = a.acc + ((r0 + r) * H + h) * D + d;
      const float* prow = sc + r * a.kb;
      float av = *acc;
      if (a.accum == 0) av = av * osc[r];
      float part = 0.0f;
      double half = 0.0;
      for (int c0 = 0; c0 < nk; c0 += static_cast<int>(ts::sage2::kPvChunk)) {
        const int nc = min(static_cast<int>(ts::sage2::kPvChunk), nk - c0);
        double cs = 0.0;
        for (int j = 0; j < nc; ++j)
          cs += static_cast<double>(prow[c0 + j]) * static_cast<double>(vh[(k0 + c0 + j) * D + d]);
        if (a.accum == 0) av = ts::sage2::f32_of_sum(av, cs);
        else if (a.accum == 1) part = ts::sage2::f32_of_sum(part, cs);
        else half = ts::sage2::fp16_of_double(half + cs);
      }
      if (a.accum != 0) av = av * osc[r] + (a.accum == 1 ? part : static_cast<float>(half));
      *acc = av;
    }
  }
  __syncthreads();
  for (long long e = threadIdx.x; e < nr * D; e += blockDim.x) {
    const int r = static_cast<int>(e / D);
    const long long d = e % D, i = ((r0 + r) * H + h) * D + d;
    float o = ts::sage2::normalize(a.acc[i], den[r]);
    if (a.vs) o = o * a.vs[h * D + d];
    a.out[i] = o;
  }
}

// The decoded E4M3 V widened to float64 (exact), the tc kernel's P·V operand.
__global__ void widen_kernel(const float* in, double* out, long long n) {
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<long long>(gridDim.x) * blockDim.x)
    out[i] = static_cast<double>(in[i]);
}

// CUDA events around what `body` launches; `meanwhile` runs on the host before the wait.
template <class F, class G>
cudaError_t timed(F body, G meanwhile, double* ms_out) {
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  cudaEventRecord(start);
  cudaError_t e = body();
  cudaEventRecord(stop);
  if (e == cudaSuccess) meanwhile();
  if (e == cudaSuccess) e = cudaEventSynchronize(stop);
  float ms = 0;
  if (e == cudaSuccess) e = cudaEventElapsedTime(&ms, start, stop);
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  *ms_out = ms;
  return e;
}

}  // namespace

const char* sage2_kernel_name(Sage2Kernel k) {
  return k == Sage2Kernel::tc ? "tc" : k == Sage2Kernel::simt ? "simt" : "auto";
}

long long sage2_shared_bytes(int blkq, int key_block) {
  return (static_cast<long long>(blkq) * key_block + 3LL * blkq) * static_cast<long long>(sizeof(float));
}

std::string sage2_attention_device(const Sage2DeviceProblem& p, const Sage2Quantisers& quant, const StoredInput& q,
                                   const StoredInput& k, const StoredInput& v, Sage2Kernel kernel,
                                   float* (*place)(void*), void* ctx, Sage2Timing* t) {
  if (kernel == Sage2Kernel::automatic)
    kernel = sage2_tc_unsupported(p.H, static_cast<int>(p.D), p.key_block).empty() ? Sage2Kernel::tc
                                                                                    : Sage2Kernel::simt;
  const bool tc = kernel == Sage2Kernel::tc;
  const size_t n = static_cast<size_t>(p.S * p.H * p.D), nt = static_cast<size_t>(p.H * p.S);
  const long long S = p.S, H = p.H, D = p.D;
  cudaError_t e;
  // The inputs as stored, side by side, then float32 head-major.
  DeviceBuffer<float> qf(n), kf(n), vf(n), km(static_cast<size_t>(p.H * p.D));
  for (cudaError_t be : {qf.err, kf.err, vf.err, km.err})
    if (be != cudaSuccess) return cuda_failure("cudaMalloc", be);
  {
    const char* what = "";
    double upload_ms = 0;
    if ((e = sage2::inputs_head_major(q, k, v, S, H, D, qf.p, kf.p, vf.p, &upload_ms, &what)) != cudaSuccess)
      return cuda_failure(what, e);
    if (t) t->upload_ms = upload_ms;
  }
  const auto t_prep = Clock::now();
  DeviceBuffer<int8_t> q8(n), k8(n);
  DeviceBuffer<float> qs(nt), ks(nt), vs(static_cast<size_t>(p.H * p.D)), acc(tc ? 0 : n), dout(n);
  DeviceBuffer<double> vd(tc ? n : 0);
  for (cudaError_t be : {q8.err, k8.err, qs.err, ks.err, vs.err, acc.err, dout.err, vd.err})
    if (be != cudaSuccess) return cuda_failure("cudaMalloc", be);
  const auto round = static_cast<sage2::Round>(quant.km_round);
  const bool per_thread = quant.per_thread != 0;
  if (quant.smooth_k) {
    if ((e = sage2::smoothing_mean(kf.p, S, H, D, quant.inv_s, round, km.p)) != cudaSuccess)
      return cuda_failure("smoothing mean", e);
    if ((e = sage2::subtract_mean(kf.p, km.p, S, H, D, per_thread, round, kf.p)) != cudaSuccess)
      return cuda_failure("k - km", e);
  }
  if ((e = sage2::quantize_int8(qf.p, S, H, D, {per_thread, true, quant.blkq, quant.warpq}, q8.p, qs.p)) !=
      cudaSuccess)
    return cuda_failure("q codes", e);
  if ((e = sage2::quantize_int8(kf.p, S, H, D, {per_thread, false, quant.blkk, quant.warpk}, k8.p, ks.p)) !=
      cudaSuccess)
    return cuda_failure("k codes", e);
  long long zeros = 0;
  // The decoded values in place of the float32 V (each element reads only its own).
  if ((e = sage2::quantize_v_fp8(vf.p, S, H, D, quant.scale_max, vf.p, vs.p, &zeros)) != cudaSuccess)
    return cuda_failure("v codes", e);
  if ((e = cudaDeviceSynchronize()) != cudaSuccess) return cuda_failure("quantisers", e);
  if (t) {
    t->prepare_ms = ms_since(t_prep);
    t->v_zero_channels = zeros;
  }
  if (!tc && (e = cudaMemset(acc.p, 0, n * 4)) != cudaSuccess) return cuda_failure("zero acc", e);
  // Poison the output so a kernel that writes nothing cannot pass.
  if ((e = cudaMemset(dout.p, 0xFF, n * 4)) != cudaSuccess) return cuda_failure("poison output", e);
  if (!tc) {
    const long long smem = sage2_shared_bytes(p.blkq, p.key_block);
    if ((e = cudaFuncSetAttribute(sage2_tile_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                  static_cast<int>(smem))) != cudaSuccess)
      return cuda_failure("shared memory size", e);
  }
  double ms = 0;
  float* out = nullptr;
  if (tc) {
    Sage2TcArgs a;
    a.S = p.S;
    a.H = static_cast<int>(p.H);
    a.D = static_cast<int>(p.D);
    a.key_block = p.key_block;
    a.accum = p.accum;
    a.sm_scale = p.sm_scale;
    a.q8 = q8.p;
    a.k8 = k8.p;
    a.qs = qs.p;
    a.ks = ks.p;
    a.v = vd.p;
    a.vs = vs.p;
    a.out = dout.p;
    e = timed(
        [&] {
          widen_kernel<<<1024, 256>>>(vf.p, vd.p, static_cast<long long>(n));
          const cudaError_t w = cudaGetLastError();
          return w != cudaSuccess ? w : sage2_tc_launch(a);
        },
        [&] { out = place(ctx); }, &ms);
  } else {
    const Args args{p.S, p.H, p.D, p.blkq, p.key_block, p.accum, p.sm_scale, q8.p, k8.p,
                    qs.p, ks.p, vf.p, vs.p, acc.p, dout.p};
    const dim3 grid(static_cast<unsigned>((p.S + p.blkq - 1) / p.blkq), static_cast<unsigned>(p.H));
    const long long smem = sage2_shared_bytes(p.blkq, p.key_block);
    e = timed(
        [&] {
          sage2_tile_kernel<<<grid, kThreads, static_cast<size_t>(smem)>>>(args);
          return cudaGetLastError();
        },
        [&] { out = place(ctx); }, &ms);
  }
  if (e != cudaSuccess) return cuda_failure(tc ? "sage2 tc kernel" : "sage2 simt kernel", e);
  const auto t1 = Clock::now();
  if ((e = copy_to_host(out, dout.p, n * 4)) != cudaSuccess) return cuda_failure("copy out", e);
  if (t) {
    t->device_ms = ms;
    t->download_ms = ms_since(t1);
    t->kernel = kernel;
  }
  return {};
}

}  // namespace ts::cuda
