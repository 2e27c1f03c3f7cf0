#include "reference/cuda/attention_sol.hpp"

#include <chrono>
#include <optional>
#include <thread>
#include <vector>

#include "core/error.hpp"
#include "core/phase.hpp"
#include "reference/cuda/exact_kernel.hpp"
#include "reference/cuda/input_for_device.hpp"
#include "reference/cuda/sol_kernel.hpp"
#include "reference/numerics/convert.hpp"
#include "reference/zero_tensor.hpp"

namespace ts::cuda {

// What one sol_cuda run leaves for the next run on the same problem: the
// routing scores and block layout on the host, every input array on the
// device. A sweep over tau prepares once; each tau only routes and runs.
struct SolCudaInputs {
  const AttentionProblem* problem = nullptr;
  const double *q = nullptr, *k = nullptr, *v = nullptr;
  const StoredTensor *q_stored = nullptr, *k_stored = nullptr, *v_stored = nullptr;
  SolConfig config;
  SolPrepared pr;  // r, blocks and dimensions; the big arrays are on the device only
  std::shared_ptr<SolDeviceInputs> device;

  bool fits(const AttentionProblem& p, const SolConfig& c) const {
    return problem == &p && q == p.q.p && k == p.k.p && v == p.v.p && q_stored == p.q_stored &&
           k_stored == p.k_stored && v_stored == p.v_stored && sol_same_inputs(config, c);
  }
};

namespace {

class SolCudaBackend final : public AttentionBackend {
 public:
  SolCudaBackend(SolConfig c, std::string name) : c_(std::move(c)), name_(std::move(name)) {}
  std::string name() const override { return name_; }
  nlohmann::json params() const override {
    nlohmann::json j = sol_params(c_);
    j["backend"] = "sol_cuda";
    j["device"] = "cuda";
    return j;
  }
  AttentionResult run(const AttentionProblem& p) override {
    sol_cuda_check(p, c_);
    double prepare_ms = 0;
    if (!inputs_ || !inputs_->fits(p, c_)) {
      inputs_.reset();  // free the device memory of other inputs first
      const auto t0 = std::chrono::steady_clock::now();
      inputs_ = sol_cuda_prepare(p, c_);
      prepare_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    }
    AttentionResult r = sol_cuda_run(*inputs_, c_);
    // 0 when this run reused an earlier run's inputs (continue_from).
    r.stats["prepare_ms"] = prepare_ms;
    return r;
  }
  std::string device() const override { return "cuda"; }
  bool reads_stored_inputs() const override { return true; }  // sol_prepare_device converts them
  void continue_from(AttentionBackend& earlier) override {
    if (auto* e = dynamic_cast<SolCudaBackend*>(&earlier)) inputs_ = e->inputs_;
  }

 private:
  SolConfig c_;
  std::string name_;
  std::shared_ptr<SolCudaInputs> inputs_;
};

// The device's shared memory per block (the H100/H200 opt-in maximum).
constexpr long long kMaxSharedBytes = 227 * 1024;

}  // namespace

void sol_cuda_check(const AttentionProblem& problem, const SolConfig& c) {
  sol_check(problem, c);
  const long long smem = sol_shared_bytes(c.block_q, c.block_k, problem.q.D);
  if (smem > kMaxSharedBytes)
    throw InputError("sol_cuda: block_q " + std::to_string(c.block_q) + " x block_k " + std::to_string(c.block_k) +
                     " at head_dim " + std::to_string(problem.q.D) + " needs " + std::to_string(smem) +
                     " bytes of shared memory per block (at most " + std::to_string(kMaxSharedBytes) +
                     "); use sol on the host");
  std::string why;
  if (!device_available(&why)) throw InputError("sol_cuda: no usable CUDA device (" + why + ")");
}

std::shared_ptr<SolCudaInputs> sol_cuda_prepare(const AttentionProblem& problem, const SolConfig& c) {
  auto in = std::make_shared<SolCudaInputs>();
  in->problem = &problem;
  in->q = problem.q.p;
  in->k = problem.k.p;
  in->v = problem.v.p;
  in->q_stored = problem.q_stored;
  in->k_stored = problem.k_stored;
  in->v_stored = problem.v_stored;
  in->config = c;
  // The context is made beside the host's work before the upload (the layout, any float32 copy).
  std::string context_err;
  std::jthread context([&context_err] { context_err = make_device_context(); });
  std::optional<Phase> ph(std::in_place, "sol_cuda: layout and inputs for the device");
  in->pr = sol_layout(problem, c);
  SolPrepared& pr = in->pr;
  std::vector<long long> blocks;
  for (const SolKeyBlock& b : pr.blocks) blocks.insert(blocks.end(), {b.start, b.length, b.video_index});
  std::vector<float> ln_n(static_cast<size_t>(pr.VB));
  for (int64_t j = 0; j < pr.VB; ++j) ln_n[j] = sol_log_block_length(pr, j);
  const InputForDevice q(problem.q, problem.q_stored), k(problem.k, problem.k_stored), v(problem.v, problem.v_stored);

  SolDeviceProblem dp;
  dp.S = pr.S;
  dp.H = pr.H;
  dp.D = pr.D;
  dp.QB = pr.QB;
  dp.VB = pr.VB;
  dp.NB = static_cast<long long>(pr.blocks.size());
  dp.block_q = static_cast<int>(c.block_q);
  dp.block_k = static_cast<int>(c.block_k);
  dp.precision = c.precision == SolPrecision::bf16 ? 0 : c.precision == SolPrecision::int8_qk ? 1 : 2;
  dp.scale = static_cast<float>(problem.softmax_scale);
  dp.blocks = blocks.data();
  dp.ln_n = ln_n.data();
  dp.softmax_scale = problem.softmax_scale;
  const SmoothingMean sm = smoothing_mean_for(pr.S, problem.input_dtype);
  dp.inv_s = sm.inv_s;
  dp.km_round = sm.km_round;
  pr.r.assign(static_cast<size_t>(pr.H * pr.QB * pr.VB), 0.0);
  ph.emplace("sol_cuda: device context (waited for)");
  context.join();
  if (!context_err.empty()) throw InternalError("sol_cuda: " + context_err);
  ph.emplace("sol_cuda: inputs to the device as stored, prepared there (widening, means, r, quantising)");
  std::string err;
  in->device = sol_prepare_device(dp, q.input(), k.input(), v.input(), pr.r.data(), nullptr, &err);
  if (!in->device) throw InternalError("sol_cuda: " + err);
  return in;
}

SolCudaPrepared sol_cuda_prepared(const AttentionProblem& problem, const SolConfig& c) {
  sol_cuda_check(problem, c);
  const std::shared_ptr<SolCudaInputs> in = sol_cuda_prepare(problem, c);
  SolCudaPrepared out;
  out.pr = in->pr;
  const size_t n = static_cast<size_t>(out.pr.S * out.pr.H * out.pr.D), nt = static_cast<size_t>(out.pr.H * out.pr.S);
  const size_t nvd = static_cast<size_t>(out.pr.H * out.pr.VB * out.pr.D);
  const size_t nbd = static_cast<size_t>(out.pr.H * static_cast<int64_t>(out.pr.blocks.size()) * out.pr.D);
  const bool int8 = c.precision != SolPrecision::bf16, pv8 = c.precision == SolPrecision::int8_qk_pv;
  const auto get = [&](const char* name, auto& dst, size_t count) {
    dst.resize(count);
    const std::string err = sol_download(*in->device, name, dst.data(), count * sizeof(dst[0]));
    if (!err.empty()) throw InternalError("sol_cuda: " + err);
  };
  get("q", out.q, n);
  get("pseudo_k", out.pseudo_k, nvd);
  get("vbar", out.vbar, nvd);
  if (!int8) get("k", out.k, n);
  if (!pv8) get("v", out.v, n);
  if (int8) {
    get("q8", out.q8, n);
    get("k8", out.k8, n);
    get("q_scale", out.q_scale, nt);
    get("k_scale", out.k_scale, nt);
  }
  if (pv8) {
    get("v8", out.v8, n);
    get("v8_scale", out.v8_scale, nbd);
  }
  return out;
}

AttentionResult sol_cuda_run(SolCudaInputs& in, const SolConfig& c) {
  SolPrepared& pr = in.pr;
  std::optional<Phase> ph(std::in_place, "sol_cuda: route (host)");
  sol_route_all(pr, c);
  ph.emplace("sol_cuda: kernel, output allocated meanwhile, download");
  AttentionResult r;
  struct Place {
    AttentionResult* r;
    std::vector<int64_t> shape;
    DType dtype;
  } place{&r, {pr.S, pr.H, pr.D}, c.round_out ? DType::bf16 : DType::f32};
  // The output's allocation (page faults of S*H*D doubles) overlaps the kernel.
  const auto alloc = [](void* x) {
    auto* pl = static_cast<Place*>(x);
    pl->r->out = zero_tensor(pl->shape, pl->dtype);
  };
  const float* out = nullptr;
  double ms = 0;
  const std::string err =
      sol_attention_device(*in.device, pr.mask.data(), c.compensation ? 1 : 0, &out, &ms, alloc, &place);
  if (!err.empty()) throw InternalError("sol_cuda: " + err);
  ph.emplace("sol_cuda: output as float64");
  const int64_t n = pr.S * pr.H * pr.D;
  double* o = r.out.ptr();
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) o[i] = c.round_out ? num::bf16_round(out[i]) : out[i];
  ph.emplace("sol_cuda: finish (density, routing dataset)");
  sol_finish(pr, c, r);
  ph.reset();
  r.stats["device_ms"] = ms;
  return r;
}

AttentionResult sol_attention(const AttentionProblem& problem, const SolConfig& c) {
  sol_cuda_check(problem, c);
  return sol_cuda_run(*sol_cuda_prepare(problem, c), c);
}

std::unique_ptr<AttentionBackend> make_sol_backend(BackendParams& params) {
  std::string name;
  const SolConfig c = sol_config_from(params, &name);
  params.finish();
  return std::make_unique<SolCudaBackend>(c, "sol_cuda_" + name.substr(4));
}

}  // namespace ts::cuda
