#pragma once
// The boundary between nvcc-compiled code and the rest: plain types only, so
// the .cu file stays free of the project's heavier headers.
#include <cstddef>
#include <string>

namespace ts::cuda {

// True when a CUDA device can be used; otherwise `why` says why not.
bool device_available(std::string* why);

// What the device measured: CUDA events around the compute (transfers excluded).
struct ExactTiming {
  double device_ms = 0;
  const char* kernel = "";  // the one that ran: "flash" or "gemm"
  long long chunk = 0;      // gemm: queries per chunk actually used (flash: 0)
  // Host clock: device setup (context, allocations, cuBLAS, staging buffers), the inputs to the device
  // (narrowed or copied into the staging buffers while the previous chunk crosses the bus), making the output
  // (while the device computes), the output back, the device memory released.
  double setup_ms = 0, upload_ms = 0, place_ms = 0, download_ms = 0, teardown_ms = 0;
  int f32_inputs = 0;  // inputs that crossed the bus as float32
};

// How the host side moves one chunk of an input or of the output (it uses all cores; the device part
// calls these between transfers). The inputs cross the bus as float32 while every value is one (the
// bf16/f16/f32 inputs of a real run: half the bytes, widened to float64 on the device, exactly), else as
// float64. An input is opaque here (`src`: what the host side passed as q, k or v: values in memory,
// or the elements as a file stores them), read from element `first` on.
struct HostCopies {
  // dst[i] = element first + i of src as float32 for i < n; false when some value is not one (NaN included).
  bool (*narrow)(const void* src, size_t first, float* dst, size_t n);
  // dst[i] = element first + i of src, as float64.
  void (*widen)(const void* src, size_t first, double* dst, size_t n);
  void (*copy)(const double* src, double* dst, size_t n);  // the output, back
};

// Which device kernel computes it. flash: fused, float64 tensor cores (compute capability 9.0+),
// no score matrix in memory (exact_flash.cu). gemm: two cuBLAS float64 GEMMs per
// chunk of queries around a materialised softmax (any CUDA device). automatic:
// flash where exact_flash_unsupported says nothing, else gemm.
enum class ExactKernel { automatic, flash, gemm };

// Why the flash kernel cannot run on the current device for this shape (empty:
// it can).
std::string exact_flash_unsupported(long long H, int D);

// The fused kernel's own exp over n host values, which takes its argument in units of ln2/128 (never
// positive) and gives its result scaled by 2^64, as the kernel computes: out[i] = 2^(y[i]/128) · 2^64 (tests
// hold it to the exact value). Returns "" or the failing CUDA call.
std::string exact_flash_exp(const double* y, double* out, long long n);

// Where the output goes: called once while the device computes (the launches
// are asynchronous), so allocating the output costs no wall time.
using OutputPlace = double* (*)(void* ctx);

// out[S*H*D] = softmax(q k^T * scale) v per head, all [S, H, D] contiguous
// (q, k, v read through copies); out = place(ctx). gemm processes `chunk` queries at a time (0:
// as many as a quarter of the free device memory holds). Returns an empty
// string, or the failing CUDA/cuBLAS call.
std::string exact_attention_fp64(const void* q, const void* k, const void* v, HostCopies copies,
                                 OutputPlace place, void* ctx, long long S, long long H, int D, double scale,
                                 ExactKernel kernel, long long chunk, ExactTiming* timing);

}  // namespace ts::cuda
