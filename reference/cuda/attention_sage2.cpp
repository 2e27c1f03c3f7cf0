#include "reference/cuda/attention_sage2.hpp"

#include <chrono>
#include <vector>

#include "core/error.hpp"
#include "reference/cuda/exact_kernel.hpp"
#include "reference/cuda/sage2_kernel.hpp"
#include "reference/numerics/convert.hpp"
#include "reference/zero_tensor.hpp"

namespace ts::cuda {
namespace {

class Sage2CudaBackend final : public AttentionBackend {
 public:
  Sage2CudaBackend(Sage2Config c, Sage2Kernel kernel, std::string name)
      : c_(std::move(c)), kernel_(kernel), name_(std::move(name)) {}
  std::string name() const override { return name_; }
  nlohmann::json params() const override {
    nlohmann::json j = sage2_params(c_);
    j["backend"] = "sage2_cuda";
    j["device"] = "cuda";
    j["kernel"] = sage2_kernel_name(kernel_);
    return j;
  }
  AttentionResult run(const AttentionProblem& p) override { return ts::cuda::sage2_attention(p, c_, kernel_); }
  std::string device() const override { return "cuda"; }
  bool reads_stored_inputs() const override { return true; }  // sage2_prepare converts them

 private:
  Sage2Config c_;
  Sage2Kernel kernel_;
  std::string name_;
};

// Each token's scale, so the device needs no layout logic.
std::vector<float> per_token(const sage2::Int8Tensor& t) {
  std::vector<float> out(static_cast<size_t>(t.H * t.S));
  for (int64_t h = 0; h < t.H; ++h)
    for (int64_t s = 0; s < t.S; ++s) out[static_cast<size_t>(h * t.S + s)] = t.scale(h, s);
  return out;
}

}  // namespace

AttentionResult sage2_attention(const AttentionProblem& problem, const Sage2Config& c, Sage2Kernel kernel) {
  sage2_check(problem, c);
  if (!c.quant_qk || !c.quant_v || !c.round_p)
    throw InputError("sage2_cuda: mirrors the quantised pipeline only (quant_qk, quant_v and round_p on); "
                     "use sage2 on the host for the identity switches");
  if (c.dump) throw InputError("sage2_cuda: dump runs on the host only (use sage2 with dump=on)");
  std::string why;
  if (!device_available(&why)) throw InputError("sage2_cuda: no usable CUDA device (" + why + ")");
  const int D = static_cast<int>(problem.q.D), kb = static_cast<int>(c.key_block);
  const std::string tc_why = sage2_tc_unsupported(problem.q.H, D, kb);
  if (kernel == Sage2Kernel::tc && !tc_why.empty())
    throw InputError("sage2_cuda: kernel=tc cannot run here: " + tc_why + " (kernel=simt can)");
  if (kernel == Sage2Kernel::automatic) kernel = tc_why.empty() ? Sage2Kernel::tc : Sage2Kernel::simt;
  if (kernel == Sage2Kernel::simt) {
    const long long smem = sage2_shared_bytes(static_cast<int>(c.blkq), kb);
    if (smem > 200 * 1024)
      throw InputError("sage2_cuda: kernel=simt: blkq " + std::to_string(c.blkq) + " x key_block " +
                       std::to_string(c.key_block) + " needs " + std::to_string(smem) +
                       " bytes of shared memory per block (at most 204800)");
  }
  using Clock = std::chrono::steady_clock;
  const auto ms = [](Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double, std::milli>(b - a).count();
  };
  const auto t0 = Clock::now();
  const Sage2Prepared pr = sage2_prepare(problem, c);
  const std::vector<float> qs = per_token(pr.q8), ks = per_token(pr.k8);
  const auto t1 = Clock::now();
  Sage2DeviceProblem dp;
  dp.S = pr.S;
  dp.H = pr.H;
  dp.D = pr.D;
  dp.blkq = static_cast<int>(c.blkq);
  dp.key_block = kb;
  dp.accum = c.accum == Sage2Accum::fp32 ? 0 : c.accum == Sage2Accum::fp32_fp32 ? 1 : 2;
  dp.sm_scale = sage2_sm_scale(problem.softmax_scale);
  dp.q8 = pr.q8.codes.data();
  dp.k8 = pr.k8.codes.data();
  dp.q_scale_tok = qs.data();
  dp.k_scale_tok = ks.data();
  dp.v = pr.v8.values.data();
  dp.v_scale = pr.v8.scales.data();
  std::vector<float> out;
  zero_fill(out, static_cast<size_t>(pr.S * pr.H * pr.D));
  Sage2Timing timing;
  const std::string err = sage2_attention_device(dp, kernel, out.data(), &timing);
  if (!err.empty()) throw InternalError("sage2_cuda: " + err);
  const auto t2 = Clock::now();
  AttentionResult r;
  r.out = zero_tensor({pr.S, pr.H, pr.D}, c.round_out ? DType::bf16 : DType::f32);
  double* o = r.out.data.data();
  const int64_t n = static_cast<int64_t>(out.size());
  const bool round_out = c.round_out;
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) o[i] = round_out ? num::bf16_round(out[i]) : out[i];
  const auto t3 = Clock::now();
  r.stats["v_zero_channels"] = pr.v8.zero_channels;
  r.stats["device_ms"] = timing.device_ms;
  r.stats["kernel"] = sage2_kernel_name(timing.kernel);
  // Where the wall time goes on the host (steady clock): the quantisers, the
  // transfers, the output's rounding.
  r.stats["prepare_ms"] = ms(t0, t1);
  r.stats["upload_ms"] = timing.upload_ms;
  r.stats["download_ms"] = timing.download_ms;
  r.stats["finish_ms"] = ms(t2, t3);
  return r;
}

std::unique_ptr<AttentionBackend> make_sage2_backend(BackendParams& params) {
  std::string name;
  const Sage2Config c = sage2_config_from(params, &name);
  const std::string k = params.get_choice("kernel", "auto", {"auto", "tc", "simt"});
  params.finish();
  if (!c.quant_qk || !c.quant_v || !c.round_p || c.dump)
    throw InputError("backend '" + params.spec() + "': sage2_cuda mirrors the quantised pipeline only "
                     "(quant_qk, quant_v, round_p on; no dump)");
  const Sage2Kernel kernel = k == "tc" ? Sage2Kernel::tc : k == "simt" ? Sage2Kernel::simt : Sage2Kernel::automatic;
  // Both kernels give the same bits, but a chosen one gets its own output name, so
  // that a fixture can hold both for a side-by-side comparison.
  const std::string suffix = kernel == Sage2Kernel::automatic ? "" : "_kernel-" + k;
  return std::make_unique<Sage2CudaBackend>(c, kernel, "sage2_cuda_" + name.substr(6) + suffix);
}

}  // namespace ts::cuda
