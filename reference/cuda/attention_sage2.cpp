#include "reference/cuda/attention_sage2.hpp"

#include <chrono>
#include <vector>

#include "core/error.hpp"
#include "reference/cuda/exact_kernel.hpp"
#include "reference/cuda/input_for_device.hpp"
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
  bool reads_stored_inputs() const override { return true; }  // the device converts them

 private:
  Sage2Config c_;
  Sage2Kernel kernel_;
  std::string name_;
};

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
  const int64_t S = problem.q.S, H = problem.q.H;
  const InputForDevice q(problem.q, problem.q_stored), k(problem.k, problem.k_stored), v(problem.v, problem.v_stored);
  Sage2DeviceProblem dp;
  dp.S = S;
  dp.H = H;
  dp.D = D;
  dp.blkq = static_cast<int>(c.blkq);
  dp.key_block = kb;
  dp.accum = c.accum == Sage2Accum::fp32 ? 0 : c.accum == Sage2Accum::fp32_fp32 ? 1 : 2;
  dp.sm_scale = sage2_sm_scale(problem.softmax_scale);
  // sage2_prepare's steps, which the device runs.
  Sage2Quantisers quant;
  quant.per_thread = c.granularity == sage2::Granularity::per_thread ? 1 : 0;
  quant.blkq = c.blkq;
  quant.warpq = c.warpq;
  quant.blkk = c.blkk;
  quant.warpk = c.warpk;
  quant.smooth_k = c.smooth_k ? 1 : 0;
  const SmoothingMean sm = smoothing_mean_for(S, problem.input_dtype);
  quant.inv_s = sm.inv_s;
  quant.km_round = sm.km_round;
  quant.scale_max = c.scale_max;
  const auto t1 = Clock::now();
  // The float32 output and the result's float64 pages are made while the kernel computes.
  struct Place {
    std::vector<float> out;
    AttentionResult r;
    std::vector<int64_t> shape;
    DType dtype;
  } place{{}, {}, {S, H, D}, c.round_out ? DType::bf16 : DType::f32};
  const auto make = [](void* x) {
    auto* pl = static_cast<Place*>(x);
    pl->r.out = zero_tensor(pl->shape, pl->dtype);
    zero_fill(pl->out, static_cast<size_t>(pl->r.out.numel()));
    return pl->out.data();
  };
  Sage2Timing timing;
  const std::string err =
      sage2_attention_device(dp, quant, q.input(), k.input(), v.input(), kernel, make, &place, &timing);
  if (!err.empty()) throw InternalError("sage2_cuda: " + err);
  const auto t2 = Clock::now();
  AttentionResult r = std::move(place.r);
  const std::vector<float>& out = place.out;
  double* o = r.out.data.data();
  const int64_t n = static_cast<int64_t>(out.size());
  const bool round_out = c.round_out;
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) o[i] = round_out ? num::bf16_round(out[i]) : out[i];
  const auto t3 = Clock::now();
  r.stats["v_zero_channels"] = timing.v_zero_channels;
  r.stats["device_ms"] = timing.device_ms;
  r.stats["kernel"] = sage2_kernel_name(timing.kernel);
  // Where the wall time goes on the host (steady clock): the inputs for the device (a float32
  // copy where they are not stored as bf16, fp16 or float32) and the output's room, the
  // transfers, the quantisers on the device, the output's rounding.
  r.stats["prepare_ms"] = ms(t0, t1) + timing.prepare_ms;
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
