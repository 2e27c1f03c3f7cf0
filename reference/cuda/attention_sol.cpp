#include "reference/cuda/attention_sol.hpp"

#include <chrono>
#include <optional>
#include <thread>
#include <vector>

#include "core/error.hpp"
#include "core/phase.hpp"
#include "reference/cuda/exact_kernel.hpp"
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
  bool reads_stored_inputs() const override { return true; }  // sol_prepare_inputs converts them
  void continue_from(AttentionBackend& earlier) override {
    if (auto* e = dynamic_cast<SolCudaBackend*>(&earlier)) inputs_ = e->inputs_;
  }

 private:
  SolConfig c_;
  std::string name_;
  std::shared_ptr<SolCudaInputs> inputs_;
};

// Each token's scale, so the device needs no layout logic.
std::vector<float> per_token(const sage2::Int8Tensor& t) {
  std::vector<float> out(static_cast<size_t>(t.H * t.S));
#pragma omp parallel for schedule(static)
  for (int64_t h = 0; h < t.H; ++h)
    for (int64_t s = 0; s < t.S; ++s) out[static_cast<size_t>(h * t.S + s)] = t.scale(h, s);
  return out;
}

template <class T>
void release(std::vector<T>& x) {
  std::vector<T>().swap(x);
}

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
  // The context is made beside the host's preparation, which uses every core for a second or more.
  std::string context_err;
  std::jthread context([&context_err] { context_err = make_device_context(); });
  std::optional<Phase> ph(std::in_place, "sol_cuda: inputs on the host (rounding, quantising, means)");
  in->pr = sol_prepare_inputs(problem, c);
  SolPrepared& pr = in->pr;
  ph.emplace("sol_cuda: pseudo keys and scales");
  const bool int8 = c.precision != SolPrecision::bf16, pv8 = c.precision == SolPrecision::int8_qk_pv;

  std::vector<long long> blocks;
  for (const SolKeyBlock& b : pr.blocks) blocks.insert(blocks.end(), {b.start, b.length, b.video_index});
  std::vector<float> pseudo_k(static_cast<size_t>(pr.H * pr.VB * pr.D)), ln_n(static_cast<size_t>(pr.VB));
  for (int64_t h = 0; h < pr.H; ++h)
    for (int64_t j = 0; j < pr.VB; ++j)
      for (int64_t d = 0; d < pr.D; ++d) pseudo_k[(h * pr.VB + j) * pr.D + d] = sol_pseudo_key(pr, c, h, j, d);
  for (int64_t j = 0; j < pr.VB; ++j) ln_n[j] = sol_log_block_length(pr, j);
  std::vector<float> qs, ks;
  if (int8) {
    qs = per_token(pr.q8);
    ks = per_token(pr.k8);
  }

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
  dp.q = pr.q.x.data();
  dp.k = int8 ? nullptr : pr.k.x.data();
  dp.v = pv8 ? nullptr : pr.v.x.data();
  dp.q8 = int8 ? pr.q8.codes.data() : nullptr;
  dp.k8 = int8 ? pr.k8.codes.data() : nullptr;
  dp.q_scale = int8 ? qs.data() : nullptr;
  dp.k_scale = int8 ? ks.data() : nullptr;
  dp.v8 = pv8 ? pr.v8.data() : nullptr;
  dp.v8_scale = pv8 ? pr.v8_scale.data() : nullptr;
  dp.pseudo_k = pseudo_k.data();
  dp.vbar = pr.vbar.data();
  dp.ln_n = ln_n.data();
  ph.emplace("sol_cuda: device context (waited for)");
  context.join();
  if (!context_err.empty()) throw InternalError("sol_cuda: " + context_err);
  std::string err;
  ph.emplace("sol_cuda: upload");
  in->device = sol_upload(dp, &err);
  if (!in->device) throw InternalError("sol_cuda: " + err);
  // The device holds them now; routing and sol_finish read only r and the layout.
  release(pr.q.x);
  release(pr.k.x);
  release(pr.v.x);
  release(pr.kbar);
  release(pr.vbar);
  release(pr.km);
  release(pr.q8.codes);
  release(pr.k8.codes);
  release(pr.v8);
  release(pr.v8_scale);
  return in;
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
