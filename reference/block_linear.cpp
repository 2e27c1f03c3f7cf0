#include "reference/block_linear.hpp"

#include <algorithm>

#include "core/error.hpp"
#include "reference/block_stages.hpp"
#include "reference/block_nvfp4.hpp"
#include "reference/numerics/convert.hpp"

namespace ts::blk {
namespace {

constexpr int kLanes = 8;

// Sum of L lane partials in a fixed pairwise order.
template <typename T>
inline T combine(const T* a) {
  return ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]));
}

// A TI x TJ tile of dot products. Lane l accumulates k = l, l + L, ...; the
// tail k >= K - K % L goes to lanes 0, 1, ... in order. The order of every
// single sum is therefore independent of TI, TJ and of the caller's loops.
template <typename T, int TI, int TJ>
inline void tile(const T* x, const T* w, int64_t K, int64_t N, T* y) {
  T acc[TI][TJ][kLanes] = {};
  const int64_t kmain = K - K % kLanes;
  for (int64_t k0 = 0; k0 < kmain; k0 += kLanes) {
    for (int i = 0; i < TI; ++i)
      for (int j = 0; j < TJ; ++j)
        for (int l = 0; l < kLanes; ++l) acc[i][j][l] += x[i * K + k0 + l] * w[j * K + k0 + l];
  }
  for (int64_t k = kmain; k < K; ++k)
    for (int i = 0; i < TI; ++i)
      for (int j = 0; j < TJ; ++j) acc[i][j][k - kmain] += x[i * K + k] * w[j * K + k];
  for (int i = 0; i < TI; ++i)
    for (int j = 0; j < TJ; ++j) y[i * N + j] = combine(acc[i][j]);
}

template <typename T>
void gemm(const T* x, int64_t rows, const T* w, int64_t N, int64_t K, T* y) {
  constexpr int TI = 2, TJ = 2;
  const int64_t jmain = N - N % TJ, imain = rows - rows % TI;
  for (int64_t j = 0; j < jmain; j += TJ) {
    for (int64_t i = 0; i < imain; i += TI) tile<T, TI, TJ>(x + i * K, w + j * K, K, N, y + i * N + j);
    for (int64_t i = imain; i < rows; ++i) tile<T, 1, TJ>(x + i * K, w + j * K, K, N, y + i * N + j);
  }
  for (int64_t j = jmain; j < N; ++j)
    for (int64_t i = 0; i < rows; ++i) tile<T, 1, 1>(x + i * K, w + j * K, K, N, y + i * N + j);
}

}  // namespace

void gemm_f64(const double* x, int64_t rows, const double* w, int64_t N, int64_t K, double* y) {
  gemm<double>(x, rows, w, N, K, y);
}
void gemm_f32(const float* x, int64_t rows, const float* w, int64_t N, int64_t K, float* y) {
  gemm<float>(x, rows, w, N, K, y);
}

Tensor linear_stage(const double* x, int64_t rows, int64_t K, const Tensor& w, const Tensor* b,
                    const LinearSpec& spec, std::vector<int64_t> out_shape) {
  if (w.rank() != 2 || w.dim(1) != K)
    throw InputError("linear: weight shape " + w.shape_string() + " does not take " +
                     std::to_string(K) + " inputs");
  const int64_t N = w.dim(0);
  if (b && (b->rank() != 1 || b->dim(0) != N))
    throw InputError("linear: bias shape " + b->shape_string() + ", expected [" +
                     std::to_string(N) + "]");
  Tensor y(std::move(out_shape), spec.mode == LinearMode::fp64 ? DType::f64 : DType::bf16);
  if (y.numel() != rows * N) throw InternalError("linear: output shape does not hold rows x N");
  const int64_t chunk = std::max<int64_t>(1, spec.chunk_tokens);
  const int64_t nchunks = (rows + chunk - 1) / chunk;

  if (spec.mode == LinearMode::fp64) {
    const double* wp = w.ptr();
#pragma omp parallel for schedule(dynamic, 1)
    for (int64_t c = 0; c < nchunks; ++c) {
      const int64_t r0 = c * chunk, nr = std::min(chunk, rows - r0);
      double* out = y.ptr() + r0 * N;
      gemm_f64(x + r0 * K, nr, wp, N, K, out);
      if (b)
        for (int64_t i = 0; i < nr; ++i)
          for (int64_t j = 0; j < N; ++j) out[i * N + j] += b->data[static_cast<size_t>(j)];
    }
    return y;
  }

  if (spec.mode == LinearMode::nvfp4) {
    nvfp4_linear(x, rows, K, w, b, spec.recipe, chunk, y.ptr());
    return y;
  }

  // bf16: weights to bf16 once; each chunk of activations to bf16 (float32).
  std::vector<float> wf(static_cast<size_t>(N * K));
  for (size_t i = 0; i < wf.size(); ++i) wf[i] = bf16_round_f64(w.data[i]);
  std::vector<float> bf;
  if (b) {
    bf.resize(static_cast<size_t>(N));
    for (int64_t j = 0; j < N; ++j) bf[static_cast<size_t>(j)] = bf16_round_f64(b->data[static_cast<size_t>(j)]);
  }
#pragma omp parallel
  {
    std::vector<float> xf(static_cast<size_t>(chunk * K)), yf(static_cast<size_t>(chunk * N));
#pragma omp for schedule(dynamic, 1)
    for (int64_t c = 0; c < nchunks; ++c) {
      const int64_t r0 = c * chunk, nr = std::min(chunk, rows - r0);
      for (int64_t i = 0; i < nr * K; ++i) xf[static_cast<size_t>(i)] = bf16_round_f64(x[r0 * K + i]);
      gemm_f32(xf.data(), nr, wf.data(), N, K, yf.data());
      double* out = y.ptr() + r0 * N;
      for (int64_t i = 0; i < nr; ++i)
        for (int64_t j = 0; j < N; ++j) {
          float v = yf[static_cast<size_t>(i * N + j)];
          if (b) v = v + bf[static_cast<size_t>(j)];
          out[i * N + j] = num::bf16_round(v);
        }
    }
  }
  return y;
}

}  // namespace ts::blk
