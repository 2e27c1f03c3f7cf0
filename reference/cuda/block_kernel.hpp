#pragma once
// The boundary between the device block's kernels (block_stages.cu,
// block_linear.cu) and its host side (block.cpp): plain types only (see
// exact_kernel.hpp). Every function returns an empty string or the failing
// CUDA/cuBLAS call. Activations live on the device as float64 (fp64 mode) or
// as float32 holding bf16 values (bf16 and nvfp4 modes).
#include <cstddef>
#include <cstdint>
#include <string>

#include "reference/numerics/nvfp4_block.hpp"

namespace ts::cuda::blockdev {

// An owning device array of n elements of `bytes` bytes each.
class Buffer {
 public:
  Buffer() = default;
  ~Buffer();
  Buffer(Buffer&& o) noexcept;
  Buffer& operator=(Buffer&& o) noexcept;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  std::string alloc(size_t n, int bytes);
  std::string upload(const void* host);    // n * bytes from the host
  std::string download(void* host) const;  // n * bytes to the host
  // Elements [at, at + n) from / to the host.
  std::string upload_part(size_t at, size_t n, const void* host);
  std::string download_part(size_t at, size_t n, void* host) const;
  void reset();
  bool empty() const { return p_ == nullptr; }
  size_t size() const { return n_; }
  void* get() const { return p_; }
  template <class T>
  T* as() const { return static_cast<T*>(p_); }

 private:
  void* p_ = nullptr;
  size_t n_ = 0;
  int bytes_ = 0;
};

// Page-locked host memory: the staging buffer of the host side's copies
// (copies from pageable memory run at a fraction of the bus's speed).
class Pinned {
 public:
  Pinned() = default;
  ~Pinned();
  Pinned(const Pinned&) = delete;
  Pinned& operator=(const Pinned&) = delete;
  std::string alloc(size_t bytes);
  void* get() const { return p_; }
  size_t bytes() const { return bytes_; }

 private:
  void* p_ = nullptr;
  size_t bytes_ = 0;
};

// Waits for the device; the first error of anything launched before.
std::string synchronize();

// --- the elementwise and per-token stages (reference/block_stages.hpp); f64
// picks float64 arrays and the _f64 definitions, else float32 and _bf16.
// mod: [R, 6, M]; mod_row: [S] int32 or empty (every token uses row 0).
std::string rms_norm(const Buffer& x, int64_t rows, int64_t n, const Buffer& w, double eps, bool f64,
                     Buffer& out);
std::string modulate(const Buffer& h, const Buffer& mod, const Buffer& mod_row, int64_t S, int64_t M,
                     int shift, int scale, bool f64, Buffer& out);
std::string gated_residual(const Buffer& base, const Buffer& y, const Buffer& mod, const Buffer& mod_row,
                           int64_t S, int64_t M, int gate, bool f64, Buffer& out);
std::string swiglu(const Buffer& fc1, int64_t S, int64_t F, bool f64, Buffer& out);
// q or k (which 0 or 1) of qkv [S, 3, H, D]: per-head RMSNorm with norm_w [D],
// then RoPE with cos/sin [S, 3, F] (the host's detmath values, float32 in
// bf16 mode) on the 3 axes' channel pairs (i, i + F) from 2 F axis.
std::string qk_rope(const Buffer& qkv, int64_t S, int64_t H, int64_t D, int which, const Buffer& norm_w,
                    double eps, const Buffer& cos, const Buffer& sin, int64_t F, bool f64, Buffer& out);

// --- the linears (reference/block_linear.hpp), y [rows, N] = x [rows, K] w [N, K]ᵀ (+ b).
// fp64: cuBLAS DGEMM, then + b.
std::string linear_f64(const Buffer& x, int64_t rows, int64_t K, const Buffer& w, int64_t N, const Buffer& b,
                       Buffer& y);
// bf16: float32 products, each output summed in the host's lane order (lane
// k mod 8, lanes combined pairwise), + b in float32, rounded to bf16.
std::string linear_bf16(const Buffer& x, int64_t rows, int64_t K, const Buffer& w, int64_t N, const Buffer& b,
                        Buffer& y);
// Largest |x| over n floats, NaN ignored (num::nvfp4_amax).
std::string amax(const Buffer& x, size_t n, float* out);
// Quantises x [rows, K] along K in 16-blocks with the global scales and the
// recipe (num::nvfp4_quantize) and writes each element's q * float(sb) to
// out [rows, Kp], Kp = K rounded up to 16, padding 0.
std::string nvfp4_quantize(const Buffer& x, int64_t rows, int64_t K, float s_enc, float s_dec,
                           num::Nvfp4Recipe recipe, Buffer& out);
// y [rows, N] from quantised xq [rows, Kp], wq [N, Kp]: each 16-block's
// partial (exact in float32) added in block order in float32, times alpha
// (= X.s_dec * W.s_dec), + b, rounded to bf16 (num::nvfp4_gemm).
std::string nvfp4_gemm(const Buffer& xq, int64_t rows, int64_t Kp, const Buffer& wq, int64_t N, float alpha,
                       const Buffer& b, Buffer& y);

}  // namespace ts::cuda::blockdev
