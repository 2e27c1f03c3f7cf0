// The device block's elementwise and per-token stages (block_kernel.hpp). Each
// thread runs the host's definition (reference/block_arith.hpp) on one element
// or one row, in the host's order, built with -fmad=false: the host's bits.
#include <cuda_runtime.h>

#include <utility>

#include "reference/block_arith.hpp"
#include "reference/cuda/block_kernel.hpp"
#include "reference/cuda/device_buffer.cuh"

namespace ts::cuda::blockdev {

Buffer::~Buffer() { reset(); }
Buffer::Buffer(Buffer&& o) noexcept { *this = std::move(o); }
Buffer& Buffer::operator=(Buffer&& o) noexcept {
  if (this != &o) {
    reset();
    std::swap(p_, o.p_);
    std::swap(n_, o.n_);
    std::swap(bytes_, o.bytes_);
  }
  return *this;
}
void Buffer::reset() {
  if (p_) cudaFree(p_);
  p_ = nullptr;
  n_ = 0;
  bytes_ = 0;
}
std::string Buffer::alloc(size_t n, int bytes) {
  reset();
  const cudaError_t e = cudaMalloc(&p_, std::max<size_t>(n, 1) * static_cast<size_t>(bytes));
  if (e != cudaSuccess) {
    p_ = nullptr;
    return cuda_failure("cudaMalloc", e);
  }
  n_ = n;
  bytes_ = bytes;
  return {};
}
std::string Buffer::upload(const void* host) {
  const cudaError_t e = cudaMemcpy(p_, host, n_ * static_cast<size_t>(bytes_), cudaMemcpyHostToDevice);
  return e == cudaSuccess ? std::string() : cuda_failure("cudaMemcpy to the device", e);
}
std::string Buffer::download(void* host) const {
  const cudaError_t e = cudaMemcpy(host, p_, n_ * static_cast<size_t>(bytes_), cudaMemcpyDeviceToHost);
  return e == cudaSuccess ? std::string() : cuda_failure("cudaMemcpy to the host", e);
}

std::string Buffer::upload_part(size_t at, size_t n, const void* host) {
  const size_t b = static_cast<size_t>(bytes_);
  const cudaError_t e = cudaMemcpy(static_cast<char*>(p_) + at * b, host, n * b, cudaMemcpyHostToDevice);
  return e == cudaSuccess ? std::string() : cuda_failure("cudaMemcpy to the device", e);
}
std::string Buffer::download_part(size_t at, size_t n, void* host) const {
  const size_t b = static_cast<size_t>(bytes_);
  const cudaError_t e = cudaMemcpy(host, static_cast<const char*>(p_) + at * b, n * b, cudaMemcpyDeviceToHost);
  return e == cudaSuccess ? std::string() : cuda_failure("cudaMemcpy to the host", e);
}

Pinned::~Pinned() {
  if (p_) cudaFreeHost(p_);
}
std::string Pinned::alloc(size_t bytes) {
  if (p_) cudaFreeHost(p_);
  p_ = nullptr;
  bytes_ = 0;
  const cudaError_t e = cudaMallocHost(&p_, bytes);
  if (e != cudaSuccess) {
    p_ = nullptr;
    return cuda_failure("cudaMallocHost", e);
  }
  bytes_ = bytes;
  return {};
}

std::string synchronize() {
  const cudaError_t e = cudaDeviceSynchronize();
  return e == cudaSuccess ? std::string() : cuda_failure("a block stage kernel", e);
}

namespace {

constexpr int kThreads = 256;

unsigned blocks_for(long long n) { return static_cast<unsigned>((n + kThreads - 1) / kThreads); }

std::string launched(const char* what) {
  const cudaError_t e = cudaGetLastError();
  return e == cudaSuccess ? std::string() : cuda_failure(what, e);
}

// The two arithmetic definitions by element type.
__device__ inline float modulate_op(float h, float sh, float sc) { return blk::modulate_bf16(h, sh, sc); }
__device__ inline double modulate_op(double h, double sh, double sc) { return blk::modulate_f64(h, sh, sc); }
__device__ inline float residual_op(float b, float g, float y) { return blk::gated_residual_bf16(b, g, y); }
__device__ inline double residual_op(double b, double g, double y) { return blk::gated_residual_f64(b, g, y); }
__device__ inline float swiglu_op(float v, float g) { return blk::swiglu_bf16(v, g); }
__device__ inline double swiglu_op(double v, double g) { return blk::swiglu_f64(v, g); }
__device__ inline void rope_op(float x1, float x2, float c, float s, float* y1, float* y2) {
  blk::rope_pair_bf16(x1, x2, c, s, y1, y2);
}
__device__ inline void rope_op(double x1, double x2, double c, double s, double* y1, double* y2) {
  blk::rope_pair_f64(x1, x2, c, s, y1, y2);
}
// reference/rms_norm.cpp (f64) and blk::rms_norm_row_bf16.
__device__ inline void rms_row(const float* x, long long n, const float* w, double eps, float* out) {
  blk::rms_norm_row_bf16(x, n, w, eps, out);
}
__device__ inline void rms_row(const double* x, long long n, const double* w, double eps, double* out) {
  double ss = 0.0;
  for (long long i = 0; i < n; ++i) ss += x[i] * x[i];
  const double inv = 1.0 / sqrt(ss / static_cast<double>(n) + eps);
  for (long long i = 0; i < n; ++i) out[i] = x[i] * inv * (w ? w[i] : 1.0);
}

template <class T>
__global__ void rms_kernel(const T* x, long long rows, long long n, const T* w, double eps, T* out) {
  const long long r = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (r < rows) rms_row(x + r * n, n, w, eps, out + r * n);
}

__device__ inline long long mod_row_of(const int32_t* rows, long long s) { return rows ? rows[s] : 0; }

template <class T>
__global__ void modulate_kernel(const T* h, const T* mod, const int32_t* rows, long long S, long long M, int shift,
                                int scale, T* out) {
  const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= S * M) return;
  const long long s = i / M, c = i % M, r = mod_row_of(rows, s);
  out[i] = modulate_op(h[i], mod[(r * 6 + shift) * M + c], mod[(r * 6 + scale) * M + c]);
}

template <class T>
__global__ void residual_kernel(const T* base, const T* y, const T* mod, const int32_t* rows, long long S,
                                long long M, int gate, T* out) {
  const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= S * M) return;
  const long long s = i / M, c = i % M, r = mod_row_of(rows, s);
  out[i] = residual_op(base[i], mod[(r * 6 + gate) * M + c], y[i]);
}

template <class T>
__global__ void swiglu_kernel(const T* fc1, long long S, long long F, T* out) {
  const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= S * F) return;
  const long long s = i / F, c = i % F;
  out[i] = swiglu_op(fc1[s * 2 * F + c], fc1[s * 2 * F + F + c]);
}

template <class T>
__global__ void qk_rope_kernel(const T* qkv, long long S, long long H, long long D, int which, const T* norm_w,
                               double eps, const T* cs, const T* sn, long long F, T* out) {
  const long long t = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= S * H) return;
  const long long s = t / H, h = t % H;
  T* row = out + (s * H + h) * D;
  rms_row(qkv + ((s * 3 + which) * H + h) * D, D, norm_w, eps, row);
  for (int ax = 0; ax < 3; ++ax) {
    T* base = row + 2 * F * ax;
    for (long long i = 0; i < F; ++i) {
      const long long at = (s * 3 + ax) * F + i;
      rope_op(base[i], base[i + F], cs[at], sn[at], &base[i], &base[i + F]);
    }
  }
}

template <class T>
const T* ptr(const Buffer& b) { return b.empty() ? nullptr : b.as<const T>(); }

}  // namespace

std::string rms_norm(const Buffer& x, int64_t rows, int64_t n, const Buffer& w, double eps, bool f64,
                     Buffer& out) {
  if (f64)
    rms_kernel<double><<<blocks_for(rows), kThreads>>>(ptr<double>(x), rows, n, ptr<double>(w), eps, out.as<double>());
  else
    rms_kernel<float><<<blocks_for(rows), kThreads>>>(ptr<float>(x), rows, n, ptr<float>(w), eps, out.as<float>());
  return launched("rms_norm kernel");
}

std::string modulate(const Buffer& h, const Buffer& mod, const Buffer& mod_row, int64_t S, int64_t M, int shift,
                     int scale, bool f64, Buffer& out) {
  const int32_t* rows = ptr<int32_t>(mod_row);
  if (f64)
    modulate_kernel<double><<<blocks_for(S * M), kThreads>>>(ptr<double>(h), ptr<double>(mod), rows, S, M, shift,
                                                             scale, out.as<double>());
  else
    modulate_kernel<float><<<blocks_for(S * M), kThreads>>>(ptr<float>(h), ptr<float>(mod), rows, S, M, shift,
                                                            scale, out.as<float>());
  return launched("modulate kernel");
}

std::string gated_residual(const Buffer& base, const Buffer& y, const Buffer& mod, const Buffer& mod_row,
                           int64_t S, int64_t M, int gate, bool f64, Buffer& out) {
  const int32_t* rows = ptr<int32_t>(mod_row);
  if (f64)
    residual_kernel<double><<<blocks_for(S * M), kThreads>>>(ptr<double>(base), ptr<double>(y), ptr<double>(mod),
                                                             rows, S, M, gate, out.as<double>());
  else
    residual_kernel<float><<<blocks_for(S * M), kThreads>>>(ptr<float>(base), ptr<float>(y), ptr<float>(mod), rows,
                                                            S, M, gate, out.as<float>());
  return launched("gated residual kernel");
}

std::string swiglu(const Buffer& fc1, int64_t S, int64_t F, bool f64, Buffer& out) {
  if (f64)
    swiglu_kernel<double><<<blocks_for(S * F), kThreads>>>(ptr<double>(fc1), S, F, out.as<double>());
  else
    swiglu_kernel<float><<<blocks_for(S * F), kThreads>>>(ptr<float>(fc1), S, F, out.as<float>());
  return launched("swiglu kernel");
}

std::string qk_rope(const Buffer& qkv, int64_t S, int64_t H, int64_t D, int which, const Buffer& norm_w,
                    double eps, const Buffer& cos, const Buffer& sin, int64_t F, bool f64, Buffer& out) {
  if (f64)
    qk_rope_kernel<double><<<blocks_for(S * H), kThreads>>>(ptr<double>(qkv), S, H, D, which, ptr<double>(norm_w),
                                                            eps, ptr<double>(cos), ptr<double>(sin), F,
                                                            out.as<double>());
  else
    qk_rope_kernel<float><<<blocks_for(S * H), kThreads>>>(ptr<float>(qkv), S, H, D, which, ptr<float>(norm_w), eps,
                                                           ptr<float>(cos), ptr<float>(sin), F, out.as<float>());
  return launched("q/k rope kernel");
}

}  // namespace ts::cuda::blockdev
