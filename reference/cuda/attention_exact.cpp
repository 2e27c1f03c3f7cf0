#include "reference/cuda/attention_exact.hpp"

#include <vector>

#include "core/error.hpp"
#include "reference/cuda/exact_kernel.hpp"

namespace ts::cuda {
namespace {

// The device kernel reads contiguous [S, H, D]; a strided view is packed first.
std::vector<double> packed(const BSHDView& x) {
  std::vector<double> out(static_cast<size_t>(x.S * x.H * x.D));
  for (int64_t s = 0; s < x.S; ++s)
    for (int64_t h = 0; h < x.H; ++h)
      for (int64_t d = 0; d < x.D; ++d) out[static_cast<size_t>((s * x.H + h) * x.D + d)] = x(s, h, d);
  return out;
}

class ExactCudaBackend final : public AttentionBackend {
 public:
  explicit ExactCudaBackend(long long chunk) : chunk_(chunk) {}
  std::string name() const override { return "exact_cuda"; }
  nlohmann::json params() const override {
    return {{"backend", "exact_cuda"}, {"precision", "fp64"}, {"device", "cuda"}, {"chunk", chunk_}};
  }
  AttentionResult run(const AttentionProblem& p) override { return attention_exact(p, chunk_); }
  std::string device() const override { return "cuda"; }

 private:
  long long chunk_;
};

}  // namespace

AttentionResult attention_exact(const AttentionProblem& p, long long chunk) {
  p.validate();
  if (chunk < 0) throw InputError("exact_cuda: chunk must be >= 0 (0: automatic), got " + std::to_string(chunk));
  std::string why;
  if (!device_available(&why)) throw InputError("exact_cuda: no usable CUDA device (" + why + ")");
  const std::vector<double> q = packed(p.q), k = packed(p.k), v = packed(p.v);
  AttentionResult r;
  r.out = Tensor({p.q.S, p.q.H, p.q.D}, DType::f64);
  ExactTiming t;
  const std::string err = exact_attention_fp64(q.data(), k.data(), v.data(), r.out.ptr(), p.q.S, p.q.H,
                                               static_cast<int>(p.q.D), p.softmax_scale, chunk, &t);
  if (!err.empty()) throw InternalError("exact_cuda: " + err);
  r.stats["device_ms"] = t.device_ms;
  r.stats["chunk"] = t.chunk;
  return r;
}

std::unique_ptr<AttentionBackend> make_exact_backend(BackendParams& params) {
  const long long chunk = params.get_int("chunk", 0);
  params.finish();
  if (chunk < 0) throw InputError("exact_cuda: chunk must be >= 0 (0: automatic), got " + std::to_string(chunk));
  return std::make_unique<ExactCudaBackend>(chunk);
}

}  // namespace ts::cuda
