#include "reference/cuda/attention_exact.hpp"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "core/error.hpp"
#include "reference/cuda/exact_kernel.hpp"
#include "reference/zero_tensor.hpp"

namespace ts::cuda {
namespace {

// What the device part reads as one input ([S, H, D] contiguous): the view's values (or a packed copy of a
// strided view), or the elements as the fixture stores them (AttentionProblem::stored_only).
struct HostInput {
  std::vector<double> packed;
  const double* p = nullptr;
  const StoredTensor* stored = nullptr;
};

HostInput host_input(const BSHDView& x, const StoredTensor* stored) {
  HostInput h;
  if (!x.p) {
    h.stored = stored;
    return h;
  }
  if (x.sD == 1 && x.sH == x.D && x.sS == x.H * x.D) {
    h.p = x.p;
    return h;
  }
  zero_fill(h.packed, static_cast<size_t>(x.S * x.H * x.D));
  double* o = h.packed.data();
#pragma omp parallel for schedule(static)
  for (int64_t s = 0; s < x.S; ++s)
    for (int64_t hh = 0; hh < x.H; ++hh)
      for (int64_t d = 0; d < x.D; ++d) o[(s * x.H + hh) * x.D + d] = x(s, hh, d);
  h.p = o;
  return h;
}

// The chunk copies the device part asks for, on all cores (one core moves about 5 GB/s; a chunk is 64 MB),
// in pieces handed out as threads come free. They need every core to themselves: on the H200 machine,
// block24's 99 input chunks took 0.11 s alone and 0.79 s (static or dynamic split) with one more busy
// thread in the process, each chunk waiting for a descheduled one.
constexpr int64_t kPiece = 1 << 15;

// Elements [first, first + n) of an input as float64: a pointer into its values, or `tmp` filled from the
// stored elements.
const double* input_values(const HostInput& in, size_t first, size_t n, std::vector<double>& tmp) {
  if (in.p) return in.p + first;
  tmp.resize(n);
  in.stored->to_double(static_cast<int64_t>(first), static_cast<int64_t>(n), tmp.data());
  return tmp.data();
}

bool narrow_chunk(const void* src, size_t first, float* dst, size_t n) {
  const auto& in = *static_cast<const HostInput*>(src);
  const int64_t pieces = (static_cast<int64_t>(n) + kPiece - 1) / kPiece;
  int inexact = 0;
#pragma omp parallel for schedule(dynamic, 1) reduction(| : inexact)
  for (int64_t i = 0; i < pieces; ++i) {
    const int64_t at = i * kPiece, end = std::min((i + 1) * kPiece, static_cast<int64_t>(n));
    // bfloat16 as stored: every value is a float32 (its bits, shifted).
    const unsigned char* bits =
        in.stored && in.stored->dtype == DType::bf16 ? in.stored->bytes_of(static_cast<int64_t>(first) + at, end - at)
                                                     : nullptr;
    if (bits) {
      for (int64_t j = at; j < end; ++j) {
        uint16_t b;
        std::memcpy(&b, bits + 2 * (j - at), 2);
        const uint32_t w = static_cast<uint32_t>(b) << 16;
        std::memcpy(dst + j, &w, 4);
      }
      continue;
    }
    std::vector<double> tmp;
    const double* x = input_values(in, first + static_cast<size_t>(at), static_cast<size_t>(end - at), tmp);
    int bad = 0;
    for (int64_t j = at; j < end; ++j) {
      const float w = static_cast<float>(x[j - at]);
      dst[j] = w;
      bad |= static_cast<double>(w) != x[j - at];
    }
    inexact |= bad;
  }
  return inexact == 0;
}

void widen_chunk(const void* src, size_t first, double* dst, size_t n) {
  const auto& in = *static_cast<const HostInput*>(src);
  const int64_t pieces = (static_cast<int64_t>(n) + kPiece - 1) / kPiece;
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t i = 0; i < pieces; ++i) {
    const size_t at = static_cast<size_t>(i * kPiece), cnt = std::min(static_cast<size_t>(kPiece), n - at);
    if (in.p)
      std::memcpy(dst + at, in.p + first + at, cnt * sizeof(double));
    else
      in.stored->to_double(static_cast<int64_t>(first + at), static_cast<int64_t>(cnt), dst + at);
  }
}

void copy_chunk(const double* src, double* dst, size_t n) {
  const int64_t pieces = (static_cast<int64_t>(n) + kPiece - 1) / kPiece;
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t i = 0; i < pieces; ++i)
    std::memcpy(dst + i * kPiece, src + i * kPiece,
                static_cast<size_t>(std::min(kPiece, static_cast<int64_t>(n) - i * kPiece)) * sizeof(double));
}

const char* kernel_name(ExactKernel k) {
  return k == ExactKernel::flash ? "flash" : k == ExactKernel::gemm ? "gemm" : "auto";
}

class ExactCudaBackend final : public AttentionBackend {
 public:
  ExactCudaBackend(ExactKernel kernel, long long chunk) : kernel_(kernel), chunk_(chunk) {}
  std::string name() const override { return "exact_cuda"; }
  nlohmann::json params() const override {
    return {{"backend", "exact_cuda"}, {"precision", "fp64"}, {"device", "cuda"},
            {"kernel", kernel_name(kernel_)}, {"chunk", chunk_}};
  }
  AttentionResult run(const AttentionProblem& p) override { return attention_exact(p, kernel_, chunk_); }
  std::string device() const override { return "cuda"; }
  bool reads_stored_inputs() const override { return true; }  // narrowed or widened from the file's bytes

 private:
  ExactKernel kernel_;
  long long chunk_;
};

void check_choice(ExactKernel kernel, long long chunk) {
  if (chunk < 0) throw InputError("exact_cuda: chunk must be >= 0 (0: automatic), got " + std::to_string(chunk));
  if (kernel == ExactKernel::flash && chunk != 0)
    throw InputError("exact_cuda: chunk applies to kernel=gemm only (the flash kernel has no score chunks)");
}

}  // namespace

AttentionResult attention_exact(const AttentionProblem& p, ExactKernel kernel, long long chunk) {
  p.validate();
  check_choice(kernel, chunk);
  std::string why;
  if (!device_available(&why)) throw InputError("exact_cuda: no usable CUDA device (" + why + ")");
  if (kernel == ExactKernel::flash && !(why = exact_flash_unsupported(p.q.H, static_cast<int>(p.q.D))).empty())
    throw InputError("exact_cuda: kernel=flash cannot run here: " + why + " (kernel=gemm can)");
  const auto t0 = std::chrono::steady_clock::now();
  const HostInput q = host_input(p.q, p.q_stored), k = host_input(p.k, p.k_stored), v = host_input(p.v, p.v_stored);
  const auto t1 = std::chrono::steady_clock::now();
  // The output is made once the kernel is under way, on all cores (zero_tensor): made beside the uploads by
  // another thread, it took a core from them and 1.2-1.4 s in all.
  AttentionResult r;
  struct Place {
    std::vector<int64_t> shape;
    AttentionResult* r;
  } place{{p.q.S, p.q.H, p.q.D}, &r};
  const OutputPlace make_output = [](void* c) {
    auto* pl = static_cast<Place*>(c);
    pl->r->out = zero_tensor(pl->shape, DType::f64);
    return pl->r->out.ptr();
  };
  ExactTiming t;
  const std::string err = exact_attention_fp64(&q, &k, &v, {narrow_chunk, widen_chunk, copy_chunk}, make_output, &place, p.q.S,
                                               p.q.H, static_cast<int>(p.q.D), p.softmax_scale, kernel, chunk, &t);
  if (!err.empty()) throw InternalError("exact_cuda: " + err);
  r.stats["device_ms"] = t.device_ms;
  r.stats["kernel"] = t.kernel;
  r.stats["chunk"] = t.chunk;
  // Where the wall time goes on the host (steady clock).
  using Ms = std::chrono::duration<double, std::milli>;
  r.stats["convert_ms"] = Ms(t1 - t0).count();
  r.stats["setup_ms"] = t.setup_ms;
  r.stats["upload_ms"] = t.upload_ms;
  r.stats["place_ms"] = t.place_ms;
  r.stats["download_ms"] = t.download_ms;
  r.stats["teardown_ms"] = t.teardown_ms;
  r.stats["f32_inputs"] = t.f32_inputs;
  return r;
}

std::unique_ptr<AttentionBackend> make_exact_backend(BackendParams& params) {
  const std::string k = params.get_choice("kernel", "auto", {"auto", "flash", "gemm"});
  const long long chunk = params.get_int("chunk", 0);
  params.finish();
  const ExactKernel kernel = k == "flash" ? ExactKernel::flash : k == "gemm" ? ExactKernel::gemm : ExactKernel::automatic;
  check_choice(kernel, chunk);
  return std::make_unique<ExactCudaBackend>(kernel, chunk);
}

}  // namespace ts::cuda
