// The device sage2 emulation against the host one, bit for bit, over presets
// and knobs. Without a device it says "skipped: no CUDA device".
#include <iostream>
#include <string>

#include "catch.hpp"
#include "core/error.hpp"
#include "fixtures/synth.hpp"
#include "kernels_under_test/registry.hpp"
#include "reference/cuda/exact_kernel.hpp"

TEST_CASE("CUDA sage2 gives the host emulation's bits") {
  std::string why;
  if (!ts::cuda::device_available(&why)) {
    std::cout << "skipped: no CUDA device (" << why << ")\n";
    return;
  }
  for (const char* preset : {"tiny", "ci"}) {
    ts::SynthOptions so;
    so.preset = preset;
    so.seed = 3;
    const ts::SynthResult syn = ts::synthesize(so);
    const auto p = ts::make_attention_problem(syn.dataset("/attention/q"), syn.dataset("/attention/k"),
                                              syn.dataset("/attention/v"), syn.config);
    for (const char* knobs : {"preset=sm121", "preset=sm89", "preset=sm90", "preset=sm121,accum=fp32",
                              "preset=sm90,accum=fp32+fp16", "preset=sm121,key_block=128,round_out=off",
                              "preset=sm89,smooth_k=off,blkq=64,warpq=16"}) {
      const ts::Tensor host = ts::make_attention_backend(std::string("sage2:") + knobs, {})->run(p).out;
      auto dev_backend = ts::make_attention_backend(std::string("sage2_cuda:") + knobs, {});
      REQUIRE(dev_backend->device() == "cuda");
      const ts::AttentionResult dev = dev_backend->run(p);
      REQUIRE(dev.out.shape == host.shape);
      REQUIRE(dev.out.dtype == host.dtype);
      size_t differ = 0, first = 0;
      for (size_t i = 0; i < host.data.size(); ++i)
        if (!(dev.out.data[i] == host.data[i]) && differ++ == 0) first = i;
      INFO(preset << " sage2 " << knobs << ": " << differ << " of " << host.data.size()
                  << " values differ; first at " << first << ": " << dev.out.data[first] << " vs "
                  << host.data[first]);
      CHECK(differ == 0);
      CHECK(dev.stats["device_ms"].get<double>() > 0);
    }
  }
  // The identity switches and dumps stay on the host: bad input, not a wrong answer.
  CHECK_THROWS_AS(ts::make_attention_backend("sage2_cuda:quant_qk=off", {}), ts::InputError);
  CHECK_THROWS_AS(ts::make_attention_backend("sage2_cuda:dump=on", {}), ts::InputError);
}
