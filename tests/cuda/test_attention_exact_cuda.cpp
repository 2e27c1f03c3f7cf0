// The device exact reference against the host one, and every CUDA backend
// against the CPU through the registry, as one loop (llama.cpp's
// test-backend-ops style). Without a device it says "skipped: no CUDA device",
// which ctest reports as a skipped test.
#include <cmath>
#include <iostream>

#include "catch.hpp"
#include "fixtures/synth.hpp"
#include "kernels_under_test/registry.hpp"
#include "reference/attention_exact.hpp"
#include "reference/cuda/attention_exact.hpp"

namespace {

double rel_l2(const ts::Tensor& a, const ts::Tensor& b) {
  double num = 0, den = 0;
  for (size_t i = 0; i < a.data.size(); ++i) {
    const double d = a.data[i] - b.data[i];
    num += d * d;
    den += b.data[i] * b.data[i];
  }
  return std::sqrt(num / den);
}

}  // namespace

TEST_CASE("CUDA exact attention equals the host reference") {
  std::string why;
  if (!ts::cuda::device_available(&why)) {
    std::cout << "skipped: no CUDA device (" << why << ")\n";
    return;
  }
  struct Case {
    const char* preset;
    double bound;  // relative L2 against the host float64 reference
  };
  for (const Case c : {Case{"tiny", 1e-13}, Case{"ci", 1e-13}}) {
    ts::SynthOptions so;
    so.preset = c.preset;
    so.seed = 3;
    const ts::SynthResult syn = ts::synthesize(so);
    const auto p = ts::make_attention_problem(syn.dataset("/attention/q"), syn.dataset("/attention/k"),
                                              syn.dataset("/attention/v"), syn.config);
    const ts::Tensor host = ts::attention_exact(p).out;
    // Every backend the registry builds for the device is judged by the same loop;
    // small chunks make the last chunk ragged (tiny: 72 tokens, ci: 832).
    for (const char* spec : {"exact_cuda", "exact_cuda:chunk=7", "exact_cuda:chunk=100"}) {
      auto backend = ts::make_attention_backend(spec, {});
      REQUIRE(backend->device() == "cuda");
      const ts::AttentionResult res = backend->run(p);
      const ts::Tensor& dev = res.out;
      if (res.stats.contains("device_ms")) CHECK(res.stats["device_ms"].get<double>() > 0);
      REQUIRE(dev.shape == host.shape);
      const double err = rel_l2(dev, host);
      INFO(c.preset << " " << spec << " rel_l2 vs host " << err);
      CHECK(std::isfinite(err));
      CHECK(err < c.bound);
    }
  }
}
