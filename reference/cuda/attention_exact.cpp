#include "reference/cuda/attention_exact.hpp"

#include <chrono>
#include <memory>
#include <vector>

#include "core/error.hpp"
#include "reference/cuda/exact_kernel.hpp"

namespace ts::cuda {
namespace {

// The device reads contiguous [S, H, D]: float32 when every value is one (the
// exact test below; NaN fails it and goes as float64), else float64, packed
// only when the view is strided.
struct HostInput {
  std::unique_ptr<float[]> f32;  // uninitialised: first touched by the parallel loop
  std::vector<double> f64;
  ExactInput in;
};

HostInput host_input(const BSHDView& x) {
  HostInput h;
  const int64_t n = x.S * x.H * x.D;
  const bool contiguous = x.sD == 1 && x.sH == x.D && x.sS == x.H * x.D;
  h.f32.reset(new float[static_cast<size_t>(n)]);
  bool exact = true;
  float* f = h.f32.get();
#pragma omp parallel for schedule(static) reduction(&& : exact)
  for (int64_t s = 0; s < x.S; ++s)
    for (int64_t hh = 0; hh < x.H; ++hh)
      for (int64_t d = 0; d < x.D; ++d) {
        const double v = x(s, hh, d);
        const float w = static_cast<float>(v);
        f[(s * x.H + hh) * x.D + d] = w;
        exact = exact && static_cast<double>(w) == v;
      }
  if (exact) {
    h.in.f32 = f;
    return h;
  }
  h.f32.reset();
  if (contiguous) {
    h.in.f64 = x.p;
    return h;
  }
  h.f64.resize(static_cast<size_t>(n));
  double* o = h.f64.data();
#pragma omp parallel for schedule(static)
  for (int64_t s = 0; s < x.S; ++s)
    for (int64_t hh = 0; hh < x.H; ++hh)
      for (int64_t d = 0; d < x.D; ++d) o[(s * x.H + hh) * x.D + d] = x(s, hh, d);
  h.in.f64 = o;
  return h;
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
  const HostInput q = host_input(p.q), k = host_input(p.k), v = host_input(p.v);
  const auto t1 = std::chrono::steady_clock::now();
  AttentionResult r;
  struct Place {
    AttentionResult* r;
    std::vector<int64_t> shape;
  } place{&r, {p.q.S, p.q.H, p.q.D}};
  const OutputPlace alloc = [](void* c) {
    auto* pl = static_cast<Place*>(c);
    pl->r->out = Tensor(pl->shape, DType::f64);
    return pl->r->out.ptr();
  };
  ExactTiming t;
  const std::string err = exact_attention_fp64(q.in, k.in, v.in, alloc, &place, p.q.S, p.q.H,
                                               static_cast<int>(p.q.D), p.softmax_scale, kernel, chunk, &t);
  if (!err.empty()) throw InternalError("exact_cuda: " + err);
  r.stats["device_ms"] = t.device_ms;
  r.stats["kernel"] = t.kernel;
  r.stats["chunk"] = t.chunk;
  // Where the wall time goes on the host (steady clock).
  using Ms = std::chrono::duration<double, std::milli>;
  r.stats["convert_ms"] = Ms(t1 - t0).count();
  r.stats["setup_ms"] = t.setup_ms;
  r.stats["upload_ms"] = t.upload_ms;
  r.stats["download_ms"] = t.download_ms;
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
