#include "reference/cuda/attention_sol.hpp"

#include <vector>

#include "core/error.hpp"
#include "reference/cuda/exact_kernel.hpp"
#include "reference/cuda/sol_kernel.hpp"
#include "reference/numerics/convert.hpp"

namespace ts::cuda {
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
  AttentionResult run(const AttentionProblem& p) override { return ts::cuda::sol_attention(p, c_); }
  std::string device() const override { return "cuda"; }

 private:
  SolConfig c_;
  std::string name_;
};

// Each token's scale, so the device needs no layout logic.
std::vector<float> per_token(const sage2::Int8Tensor& t) {
  std::vector<float> out(static_cast<size_t>(t.H * t.S));
  for (int64_t h = 0; h < t.H; ++h)
    for (int64_t s = 0; s < t.S; ++s) out[static_cast<size_t>(h * t.S + s)] = t.scale(h, s);
  return out;
}

// The device's shared memory per block (the H100/H200 opt-in maximum).
constexpr long long kMaxSharedBytes = 227 * 1024;

}  // namespace

AttentionResult sol_attention(const AttentionProblem& problem, const SolConfig& c) {
  sol_check(problem, c);
  const long long smem = sol_shared_bytes(c.block_q, c.block_k, problem.q.D);
  if (smem > kMaxSharedBytes)
    throw InputError("sol_cuda: block_q " + std::to_string(c.block_q) + " x block_k " + std::to_string(c.block_k) +
                     " at head_dim " + std::to_string(problem.q.D) + " needs " + std::to_string(smem) +
                     " bytes of shared memory per block (at most " + std::to_string(kMaxSharedBytes) +
                     "); use sol on the host");
  std::string why;
  if (!device_available(&why)) throw InputError("sol_cuda: no usable CUDA device (" + why + ")");
  const SolPrepared pr = sol_prepare(problem, c);
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
  dp.compensation = c.compensation ? 1 : 0;
  dp.scale = static_cast<float>(problem.softmax_scale);
  dp.blocks = blocks.data();
  dp.mask = pr.mask.data();
  dp.q = pr.q.x.data();
  dp.k = int8 ? nullptr : pr.k.x.data();
  dp.v = pv8 ? nullptr : pr.v.x.data();
  dp.q8 = int8 ? pr.q8.codes.data() : nullptr;
  dp.k8 = int8 ? pr.k8.codes.data() : nullptr;
  dp.q_scale = int8 ? qs.data() : nullptr;
  dp.k_scale = int8 ? ks.data() : nullptr;
  dp.v8 = pv8 ? pr.v8.data() : nullptr;
  dp.v8_scale = pv8 ? pr.v8_scale.data() : nullptr;
  dp.pseudo_k = c.compensation ? pseudo_k.data() : nullptr;
  dp.vbar = c.compensation ? pr.vbar.data() : nullptr;
  dp.ln_n = ln_n.data();
  std::vector<float> out(static_cast<size_t>(pr.S * pr.H * pr.D));
  double ms = 0;
  const std::string err = sol_attention_device(dp, out.data(), &ms);
  if (!err.empty()) throw InternalError("sol_cuda: " + err);
  AttentionResult r;
  r.out = Tensor({pr.S, pr.H, pr.D}, c.round_out ? DType::bf16 : DType::f32);
  for (size_t i = 0; i < out.size(); ++i) r.out.data[i] = c.round_out ? num::bf16_round(out[i]) : out[i];
  sol_finish(pr, c, r);
  r.stats["device_ms"] = ms;
  return r;
}

std::unique_ptr<AttentionBackend> make_sol_backend(BackendParams& params) {
  std::string name;
  const SolConfig c = sol_config_from(params, &name);
  params.finish();
  return std::make_unique<SolCudaBackend>(c, "sol_cuda_" + name.substr(4));
}

}  // namespace ts::cuda
