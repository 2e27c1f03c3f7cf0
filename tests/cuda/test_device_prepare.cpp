// sol_cuda and sage2_cuda prepare their inputs on the device (reference/cuda/sol_prepare.cu,
// sage2_quant.cu) from q, k, v as stored. sol: every array it makes must be the host
// preparation's (sol_prepare_inputs) to the bit, since the routing is decided from r on the host
// and the attention reads the rest; checked array by array, so that a wrong step names itself.
// sage2: the output bits, which every quantiser's bits decide. Both from float64 values (the
// presets) and from inputs as stored (bf16, fp16 and float32, cut into uneven pieces as a
// fixture's chunks are); sol for each precision and on ragged block sizes (a last query block
// and last key blocks that are short), sage2 for each granularity, with and without smoothing.
#include <cstring>
#include <iostream>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "catch.hpp"
#include "fixtures/synth.hpp"
#include "kernels_under_test/registry.hpp"
#include "reference/attention_sol.hpp"
#include "reference/cuda/attention_sol.hpp"
#include "reference/cuda/exact_kernel.hpp"
#include "reference/numerics/convert.hpp"

namespace {

// Index of the first element where the two differ bitwise, or -1 (and -2 on a size mismatch).
template <class A, class B>
long long first_difference(const A& a, const B& b) {
  if (a.size() != b.size()) return -2;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::memcmp(&a[i], &b[i], sizeof a[i]) != 0) return static_cast<long long>(i);
  return -1;
}

#define SAME_ARRAY(name, dev, host)                                                           \
  do {                                                                                        \
    const long long at = first_difference(dev, host);                                         \
    INFO(what << ": " << name << " differs first at " << at << " of " << (host).size());      \
    CHECK(at == -1);                                                                          \
  } while (0)

void compare(const ts::AttentionProblem& p, const ts::SolConfig& c, const std::string& what) {
  const ts::SolPrepared host = ts::sol_prepare_inputs(p, c);
  const ts::cuda::SolCudaPrepared dev = ts::cuda::sol_cuda_prepared(p, c);
  const bool int8 = c.precision != ts::SolPrecision::bf16, pv8 = c.precision == ts::SolPrecision::int8_qk_pv;
  REQUIRE(dev.pr.VB == host.VB);
  REQUIRE(dev.pr.QB == host.QB);
  SAME_ARRAY("q", dev.q, host.q.x);
  SAME_ARRAY("r", dev.pr.r, host.r);
  SAME_ARRAY("vbar", dev.vbar, host.vbar);
  std::vector<float> pseudo(host.kbar.size());
  for (int64_t h = 0; h < host.H; ++h)
    for (int64_t j = 0; j < host.VB; ++j)
      for (int64_t d = 0; d < host.D; ++d)
        pseudo[static_cast<size_t>((h * host.VB + j) * host.D + d)] = ts::sol_pseudo_key(host, c, h, j, d);
  SAME_ARRAY("pseudo_k", dev.pseudo_k, pseudo);
  if (!int8) SAME_ARRAY("k", dev.k, host.k.x);
  if (!pv8) SAME_ARRAY("v", dev.v, host.v.x);
  if (int8) {
    SAME_ARRAY("q8", dev.q8, host.q8.codes);
    SAME_ARRAY("k8", dev.k8, host.k8.codes);
    std::vector<float> qs(static_cast<size_t>(host.H * host.S)), ks(qs.size());
    for (int64_t h = 0; h < host.H; ++h)
      for (int64_t s = 0; s < host.S; ++s) {
        qs[static_cast<size_t>(h * host.S + s)] = host.q8.scale(h, s);
        ks[static_cast<size_t>(h * host.S + s)] = host.k8.scale(h, s);
      }
    SAME_ARRAY("q_scale", dev.q_scale, qs);
    SAME_ARRAY("k_scale", dev.k_scale, ks);
  }
  if (pv8) {
    SAME_ARRAY("v8", dev.v8, host.v8);
    SAME_ARRAY("v8_scale", dev.v8_scale, host.v8_scale);
  }
}

ts::SolConfig config(ts::SolPrecision precision, int64_t block_q, int64_t block_k) {
  ts::SolConfig c;
  c.precision = precision;
  c.block_q = block_q;
  c.block_k = block_k;
  return c;
}

// A stored copy of t's elements as `dt`, in pieces of uneven lengths.
struct Stored {
  std::vector<unsigned char> bytes;
  ts::StoredTensor t;
  Stored(const ts::Tensor& src, ts::DType dt, uint64_t seed) {
    const size_t n = src.data.size(), es = dt == ts::DType::f32 ? 4 : 2;
    bytes.resize(n * es);
    for (size_t i = 0; i < n; ++i) {
      const float x = static_cast<float>(src.data[i]);
      if (dt == ts::DType::f32) {
        std::memcpy(bytes.data() + 4 * i, &x, 4);
      } else {
        const uint16_t b = dt == ts::DType::bf16 ? ts::num::bf16_bits(x) : ts::num::fp16_bits(x);
        std::memcpy(bytes.data() + 2 * i, &b, 2);
      }
    }
    t.shape = src.shape;
    t.dtype = dt;
    std::mt19937_64 rng(seed);
    for (size_t first = 0; first < n;) {
      const size_t count = std::min<size_t>(n - first, 1 + rng() % 5000);
      t.spans.push_back({static_cast<int64_t>(first), static_cast<int64_t>(count), bytes.data() + first * es});
      first += count;
    }
  }
};

}  // namespace

TEST_CASE("sol_cuda prepares every array on the device as the host does: bit for bit") {
  std::string why;
  if (!ts::cuda::device_available(&why)) {
    std::cout << "skipped: no CUDA device (" << why << ")\n";
    return;
  }
  const ts::SolPrecision precisions[] = {ts::SolPrecision::bf16, ts::SolPrecision::int8_qk,
                                         ts::SolPrecision::int8_qk_pv};
  for (const char* preset : {"tiny", "ci"}) {
    ts::SynthOptions so;
    so.preset = preset;
    so.seed = 11;
    const ts::SynthResult syn = ts::synthesize(so);
    const ts::Tensor &q = syn.dataset("/attention/q"), &k = syn.dataset("/attention/k"),
                     &v = syn.dataset("/attention/v");
    const ts::AttentionProblem values = ts::make_attention_problem(q, k, v, syn.config);
    for (const ts::SolPrecision pr : precisions)
      for (const auto& [bq, bk] : {std::pair<int64_t, int64_t>{128, 64}, {64, 16}, {96, 48}}) {
        const std::string what = std::string(preset) + " values " + ts::sol_precision_name(pr) + " block_q " +
                                 std::to_string(bq) + " block_k " + std::to_string(bk);
        compare(values, config(pr, bq, bk), what);
      }
    for (const ts::DType dt : {ts::DType::bf16, ts::DType::f16, ts::DType::f32}) {
      const Stored sq(q, dt, 1), sk(k, dt, 2), sv(v, dt, 3);
      const ts::AttentionProblem stored = ts::make_stored_attention_problem(sq.t, sk.t, sv.t, dt, syn.config);
      for (const ts::SolPrecision pr : precisions) {
        const std::string what = std::string(preset) + " stored " + ts::dtype_name(dt) + " " +
                                 ts::sol_precision_name(pr);
        compare(stored, config(pr, 128, 64), what);
      }
    }
  }
}

TEST_CASE("sage2_cuda quantises on the device from inputs as stored: the host's output bits") {
  std::string why;
  if (!ts::cuda::device_available(&why)) {
    std::cout << "skipped: no CUDA device (" << why << ")\n";
    return;
  }
  ts::SynthOptions so;
  so.preset = "ci";
  so.seed = 12;
  const ts::SynthResult syn = ts::synthesize(so);
  const ts::Tensor &q = syn.dataset("/attention/q"), &k = syn.dataset("/attention/k"),
                   &v = syn.dataset("/attention/v");
  for (const ts::DType dt : {ts::DType::bf16, ts::DType::f16, ts::DType::f32}) {
    const Stored sq(q, dt, 4), sk(k, dt, 5), sv(v, dt, 6);
    const ts::AttentionProblem stored = ts::make_stored_attention_problem(sq.t, sk.t, sv.t, dt, syn.config);
    for (const char* knobs : {"preset=sm121", "preset=sm90", "preset=sm89,smooth_k=off", "preset=sm90,smooth_k=off"}) {
      const ts::AttentionResult host = ts::make_attention_backend(std::string("sage2:") + knobs, {})->run(stored);
      const ts::AttentionResult dev = ts::make_attention_backend(std::string("sage2_cuda:") + knobs, {})->run(stored);
      INFO(ts::dtype_name(dt) << " " << knobs);
      REQUIRE(dev.out.data.size() == host.out.data.size());
      CHECK(first_difference(dev.out.data, host.out.data) == -1);
      CHECK(dev.stats["v_zero_channels"] == host.stats["v_zero_channels"]);
    }
  }
}
