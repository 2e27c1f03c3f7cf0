// The exact attention reference's device part (see attention_exact.hpp): the
// inputs to the device, one of two kernels, the output back. The default is the
// fused float64 tensor-core kernel (exact_flash.cu); this file holds the other,
// kept for devices without float64 tensor cores or the shared memory it needs:
//
// Per chunk of queries and for all heads at once: scores = Q Kᵀ·scale with a
// float64 cuBLAS GEMM (the H200's float64 tensor cores), an exact float64
// softmax over the whole key row (max first, then exp and the row sum), P·V with
// a second float64 GEMM, then division by the row sum as the host reference
// does. The whole row is materialised: S x chunk x H float64 scores go to memory
// and back twice per chunk, which made this path memory-bound (1.83 s at block24
// on an H200, the fused kernel's reason to exist). cuBLAS gives the same bits run to run on
// one GPU model; the block reduction below has a fixed order.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <string>

#include "reference/cuda/device_buffer.cuh"
#include "reference/cuda/exact_flash.cuh"
#include "reference/cuda/exact_kernel.hpp"

namespace ts::cuda {
namespace {

constexpr int kThreads = 256;

struct Blas {
  cublasHandle_t h = nullptr;
  cublasStatus_t status;
  explicit Blas(bool needed) : status(needed ? cublasCreate(&h) : CUBLAS_STATUS_SUCCESS) {}
  ~Blas() {
    if (h) cublasDestroy(h);
  }
};

struct Events {
  cudaEvent_t start = nullptr, stop = nullptr;
  Events() {
    cudaEventCreate(&start);
    cudaEventCreate(&stop);
  }
  ~Events() {
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
  }
};

// Sum or max of one value per thread, in a fixed tree order.
template <bool kMax>
__device__ double block_reduce(double x, double* shared) {
  shared[threadIdx.x] = x;
  __syncthreads();
  for (int w = kThreads / 2; w > 0; w /= 2) {
    if (threadIdx.x < w)
      shared[threadIdx.x] = kMax ? fmax(shared[threadIdx.x], shared[threadIdx.x + w])
                                 : shared[threadIdx.x] + shared[threadIdx.x + w];
    __syncthreads();
  }
  const double r = shared[0];
  __syncthreads();
  return r;
}

// Row (query r of head h): scores -> exp(s - max) in place; the row sum to l.
__global__ void softmax_rows(double* scores, double* l, long long S, long long chunk) {
  __shared__ double shared[kThreads];
  double* row = scores + (static_cast<long long>(blockIdx.y) * chunk + blockIdx.x) * S;
  double m = -INFINITY;
  for (long long j = threadIdx.x; j < S; j += kThreads) m = fmax(m, row[j]);
  m = block_reduce<true>(m, shared);
  double sum = 0.0;
  for (long long j = threadIdx.x; j < S; j += kThreads) {
    const double p = exp(row[j] - m);
    row[j] = p;
    sum += p;
  }
  sum = block_reduce<false>(sum, shared);
  if (threadIdx.x == 0) l[static_cast<long long>(blockIdx.y) * chunk + blockIdx.x] = sum;
}

// out rows of this chunk /= their row sums.
__global__ void divide_rows(double* out, const double* l, long long H, int D, long long chunk) {
  const long long r = blockIdx.x, h = blockIdx.y;
  const double den = l[h * chunk + r];
  for (int d = threadIdx.x; d < D; d += blockDim.x) out[(r * H + h) * D + d] /= den;
}

__global__ void widen(const float* in, double* out, size_t n) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x)
    out[i] = in[i];
}

std::string fail(const char* what, cudaError_t e) { return cuda_failure(what, e); }

// The host-device traffic goes through two pinned buffers of kChunk doubles, so a transfer runs at the
// bus's speed (pageable memory took 0.55 s for block24's inputs on the H200 machine) while the host
// fills or empties the other buffer. A blocking stream: it runs after the kernels of the default stream
// and they after it.
constexpr size_t kChunk = size_t{1} << 23;

struct Staging {
  void* host[2] = {nullptr, nullptr};
  float* narrow[2] = {nullptr, nullptr};  // device: a float32 chunk before its widening
  cudaEvent_t done[2] = {nullptr, nullptr};
  cudaStream_t stream = nullptr;
  cudaError_t err = cudaSuccess;
  const char* what = "";
  Staging() {
    const auto step = [&](const char* w, cudaError_t e) {
      if (err == cudaSuccess && e != cudaSuccess) err = e, what = w;
    };
    step("cudaStreamCreate", cudaStreamCreate(&stream));
    for (int b = 0; b < 2; ++b) {
      step("cudaMallocHost", cudaMallocHost(&host[b], kChunk * sizeof(double)));
      step("cudaMalloc", cudaMalloc(&narrow[b], kChunk * sizeof(float)));
      step("cudaEventCreate", cudaEventCreateWithFlags(&done[b], cudaEventDisableTiming));
    }
  }
  ~Staging() {
    if (stream) cudaStreamSynchronize(stream);
    for (int b = 0; b < 2; ++b) {
      cudaFreeHost(host[b]);
      cudaFree(narrow[b]);
      if (done[b]) cudaEventDestroy(done[b]);
    }
    if (stream) cudaStreamDestroy(stream);
  }
  Staging(const Staging&) = delete;
  Staging& operator=(const Staging&) = delete;
};

// dst (n doubles on the device) = src, as float32 chunks while every value is one (then true), else
// again from the start as float64 (what an earlier chunk wrote is overwritten, in stream order).
cudaError_t upload(const void* src, double* dst, size_t n, const HostCopies& copies, Staging& st, bool* f32) {
  cudaError_t e = cudaSuccess;
  for (const bool narrow : {true, false}) {
    bool all = true;
    for (size_t off = 0, c = 0; off < n && all; off += kChunk, ++c) {
      const size_t cnt = std::min(kChunk, n - off);
      const int b = static_cast<int>(c & 1);
      if ((e = cudaEventSynchronize(st.done[b])) != cudaSuccess) return e;  // its last transfer is over
      if (narrow) {
        if (!(all = copies.narrow(src, off, static_cast<float*>(st.host[b]), cnt))) break;
        if ((e = cudaMemcpyAsync(st.narrow[b], st.host[b], cnt * sizeof(float), cudaMemcpyHostToDevice,
                                 st.stream)) != cudaSuccess)
          return e;
        widen<<<1024, kThreads, 0, st.stream>>>(st.narrow[b], dst + off, cnt);
        if ((e = cudaGetLastError()) != cudaSuccess) return e;
      } else {
        copies.widen(src, off, static_cast<double*>(st.host[b]), cnt);
        if ((e = cudaMemcpyAsync(dst + off, st.host[b], cnt * sizeof(double), cudaMemcpyHostToDevice,
                                 st.stream)) != cudaSuccess)
          return e;
      }
      if ((e = cudaEventRecord(st.done[b], st.stream)) != cudaSuccess) return e;
    }
    if (all) {
      *f32 = narrow;
      return cudaSuccess;
    }
  }
  return cudaSuccess;
}

// out (n host doubles) = src (device): chunk c + 1 crosses the bus while the host copies chunk c out of
// its buffer.
cudaError_t download(const double* src, double* out, size_t n, const HostCopies& copies, Staging& st) {
  const size_t chunks = (n + kChunk - 1) / kChunk;
  const auto issue = [&](size_t c) {
    const size_t off = c * kChunk, cnt = std::min(kChunk, n - off);
    const int b = static_cast<int>(c & 1);
    cudaError_t e = cudaMemcpyAsync(st.host[b], src + off, cnt * sizeof(double), cudaMemcpyDeviceToHost, st.stream);
    return e == cudaSuccess ? cudaEventRecord(st.done[b], st.stream) : e;
  };
  cudaError_t e = chunks > 0 ? issue(0) : cudaSuccess;
  for (size_t c = 0; c < chunks && e == cudaSuccess; ++c) {
    if (c + 1 < chunks && (e = issue(c + 1)) != cudaSuccess) break;
    const int b = static_cast<int>(c & 1);
    if ((e = cudaEventSynchronize(st.done[b])) != cudaSuccess) break;
    copies.copy(static_cast<const double*>(st.host[b]), out + c * kChunk, std::min(kChunk, n - c * kChunk));
  }
  return e;
}
std::string fail(const char* what, cublasStatus_t s) {
  return std::string(what) + ": cuBLAS status " + std::to_string(static_cast<int>(s));
}

// The whole device part; its buffers go back when it returns (`done`: when the output was in place).
std::string run_device(const void* q, const void* k, const void* v, const HostCopies& copies,
                       OutputPlace place, void* ctx, long long S, long long H, int D, double scale,
                       ExactKernel kernel, long long chunk, ExactTiming& host, Clock::time_point& done) {
  auto t0 = Clock::now();
  const size_t n = static_cast<size_t>(S * H * D);
  if (kernel == ExactKernel::automatic)
    kernel = chunk == 0 && exact_flash_unsupported(H, D).empty() ? ExactKernel::flash : ExactKernel::gemm;
  const bool flash = kernel == ExactKernel::flash;
  if (flash) {
    chunk = 0;
  } else if (chunk <= 0) {
    // As many queries per chunk as a quarter of the free memory holds in scores, at most
    // 32 GiB: the P·V GEMM's output is only D x chunk per head, so a small chunk leaves
    // most of the device idle in it (block24 on an H200: 2016 queries, not 480).
    size_t free_b = 0, total_b = 0;
    cudaError_t e = cudaMemGetInfo(&free_b, &total_b);
    if (e != cudaSuccess) return fail("cudaMemGetInfo", e);
    const double budget = std::min(static_cast<double>(free_b) / 4, 32.0 * (1ull << 30));
    chunk = static_cast<long long>(budget / (8.0 * static_cast<double>(S * H)));
    chunk = std::max(32LL, chunk / 32 * 32);
  }
  chunk = std::min(chunk, S);
  DeviceBuffer<double> dq(n), dk(n), dv(n), dout(n);
  DeviceBuffer<double> scores(static_cast<size_t>(chunk * H * S)), l(static_cast<size_t>(chunk * H));  // gemm only
  for (const DeviceBuffer<double>* b : {&dq, &dk, &dv, &dout, &scores, &l})
    if (b->err != cudaSuccess) return fail("cudaMalloc", b->err);
  Blas blas(!flash);
  if (blas.status != CUBLAS_STATUS_SUCCESS) return fail("cublasCreate", blas.status);
  Events ev;
  Staging staging;
  if (staging.err != cudaSuccess) return fail(staging.what, staging.err);
  cudaError_t e;
  host.setup_ms = ms_since(t0);
  t0 = Clock::now();
  const struct {
    const char* what;
    const void* src;
    double* dst;
  } inputs[3] = {{"copy q", q, dq.p}, {"copy k", k, dk.p}, {"copy v", v, dv.p}};
  for (const auto& in : inputs) {
    bool f32 = false;
    if ((e = upload(in.src, in.dst, n, copies, staging, &f32)) != cudaSuccess) return fail(in.what, e);
    host.f32_inputs += f32 ? 1 : 0;
  }
  if ((e = cudaStreamSynchronize(staging.stream)) != cudaSuccess) return fail("widen inputs", e);
  host.upload_ms = ms_since(t0);
  // Poison the output so a kernel that writes nothing cannot pass.
  if ((e = cudaMemset(dout.p, 0xFF, n * 8)) != cudaSuccess) return fail("poison output", e);
  if ((e = cudaEventRecord(ev.start)) != cudaSuccess) return fail("event", e);
  // [S, H, D] row-major seen column-major: head h of K is a D x S matrix at k + h*D with
  // leading dimension H*D, so heads are a strided batch with stride D.
  const long long HD = H * D;
  const double one = 1.0, zero = 0.0;
  if (flash && (e = exact_flash_launch(dq.p, dk.p, dv.p, dout.p, S, H, D, scale)) != cudaSuccess)
    return fail("flash kernel launch", e);
  for (long long c0 = 0; !flash && c0 < S; c0 += chunk) {
    const long long nq = std::min(chunk, S - c0);
    // scores_h (S x nq, column r = query c0+r) = scale · K_hᵀ Q_h
    cublasStatus_t st = cublasDgemmStridedBatched(
        blas.h, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(S), static_cast<int>(nq), D, &scale, dk.p,
        static_cast<int>(HD), D, dq.p + c0 * HD, static_cast<int>(HD), D, &zero, scores.p,
        static_cast<int>(S), chunk * S, static_cast<int>(H));
    if (st != CUBLAS_STATUS_SUCCESS) return fail("scores GEMM", st);
    softmax_rows<<<dim3(static_cast<unsigned>(nq), static_cast<unsigned>(H)), kThreads>>>(scores.p, l.p, S, chunk);
    if ((e = cudaGetLastError()) != cudaSuccess) return fail("softmax launch", e);
    // out_h (D x nq) = V_h (D x S) · P_h (S x nq)
    st = cublasDgemmStridedBatched(blas.h, CUBLAS_OP_N, CUBLAS_OP_N, D, static_cast<int>(nq),
                                   static_cast<int>(S), &one, dv.p, static_cast<int>(HD), D, scores.p,
                                   static_cast<int>(S), chunk * S, &zero, dout.p + c0 * HD,
                                   static_cast<int>(HD), D, static_cast<int>(H));
    if (st != CUBLAS_STATUS_SUCCESS) return fail("P·V GEMM", st);
    divide_rows<<<dim3(static_cast<unsigned>(nq), static_cast<unsigned>(H)), 128>>>(dout.p + c0 * HD, l.p, H, D, chunk);
    if ((e = cudaGetLastError()) != cudaSuccess) return fail("divide launch", e);
  }
  if ((e = cudaEventRecord(ev.stop)) != cudaSuccess) return fail("event", e);
  t0 = Clock::now();
  double* out = place(ctx);
  host.place_ms = ms_since(t0);
  if ((e = cudaEventSynchronize(ev.stop)) != cudaSuccess) return fail("kernels", e);
  t0 = Clock::now();
  if ((e = download(dout.p, out, n, copies, staging)) != cudaSuccess) return fail("copy out", e);
  host.download_ms = ms_since(t0);
  float ms = 0;
  if ((e = cudaEventElapsedTime(&ms, ev.start, ev.stop)) != cudaSuccess) return fail("event time", e);
  host.device_ms = ms;
  host.kernel = flash ? "flash" : "gemm";
  host.chunk = chunk;
  done = Clock::now();
  return {};
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

std::string exact_attention_fp64(const void* q, const void* k, const void* v, HostCopies copies,
                                 OutputPlace place, void* ctx, long long S, long long H, int D, double scale,
                                 ExactKernel kernel, long long chunk, ExactTiming* timing) {
  ExactTiming host;
  Clock::time_point done;
  const std::string err = run_device(q, k, v, copies, place, ctx, S, H, D, scale, kernel, chunk, host, done);
  host.teardown_ms = err.empty() ? ms_since(done) : 0.0;  // its device memory, staging buffers, cuBLAS released
  if (timing) *timing = host;
  return err;
}

}  // namespace ts::cuda
