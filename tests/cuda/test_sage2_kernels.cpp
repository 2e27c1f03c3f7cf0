// sage2_cuda's two device kernels (kernel=tc: INT8 and float64 tensor cores;
// kernel=simt: dp4a, one thread per softmax row) against the host emulation, bit
// for bit, on shapes chosen to break a wrong tensor-core fragment layout or tile
// edge: a single token, sequences shorter than one 64-query tile or one key
// block, lengths that are no multiple of the tile (64), of a key block (64, 128)
// or of a P·V chunk (32), every head dim the tc kernel takes (32, 64, 128), and
// several heads (a wrong head offset). The fixture presets (tests/cuda/
// test_device_backends.cpp) cover the same at 72, 832 and 8578 tokens.
#include <cmath>
#include <cstring>
#include <iostream>
#include <string>

#include "../reference/test_sage2_inputs.hpp"
#include "catch.hpp"
#include "core/error.hpp"
#include "kernels_under_test/registry.hpp"
#include "reference/cuda/exact_kernel.hpp"
#include "reference/cuda/sage2_kernel.hpp"

namespace {

struct Shape {
  int64_t S, H, D;
};

// Values that differ from the host's (bitwise; NaN counts as differing).
size_t differing(const ts::Tensor& a, const ts::Tensor& b) {
  size_t n = 0;
  for (size_t i = 0; i < a.data.size(); ++i) {
    const double x = a.data[i], y = b.data[i];
    n += (std::memcmp(&x, &y, sizeof x) != 0 || std::isnan(x)) ? 1 : 0;
  }
  return n;
}

}  // namespace

TEST_CASE("sage2_cuda kernels give the host's bits on ragged shapes") {
  std::string why;
  if (!ts::cuda::device_available(&why)) {
    std::cout << "skipped: no CUDA device (" << why << ")\n";
    return;
  }
  const Shape shapes[] = {{1, 1, 32}, {37, 2, 64}, {100, 3, 128}, {129, 1, 32}, {200, 2, 128}, {333, 2, 64}};
  // key_block 64 and 128, the three accumulation modes, both quantiser granularities.
  const char* knobs[] = {"preset=sm121", "preset=sm90", "preset=sm121,accum=fp32", "preset=sm89,key_block=128"};
  const bool tc_here = ts::cuda::sage2_tc_unsupported(1, 128, 64).empty();
  std::printf("%-44s %-14s %-6s %8s\n", "sage2_cuda", "S,H,D", "kernel", "differ");
  for (const Shape& sh : shapes) {
    const ts::testing::Inputs in = ts::testing::make_inputs(sh.S, sh.H, sh.D, 11 + static_cast<uint64_t>(sh.S));
    const ts::AttentionProblem p = in.problem();
    for (const char* k : knobs) {
      const ts::AttentionResult host = ts::make_attention_backend(std::string("sage2:") + k, {})->run(p);
      for (const char* kernel : {"tc", "simt"}) {
        if (std::string(kernel) == "tc" && !tc_here) continue;
        const std::string spec = std::string("sage2_cuda:") + k + ",kernel=" + kernel;
        const ts::AttentionResult dev = ts::make_attention_backend(spec, {})->run(p);
        const size_t n = differing(dev.out, host.out);
        std::printf("%-44s %4lld,%lld,%-6lld %-6s %8zu\n", spec.c_str(), static_cast<long long>(sh.S),
                    static_cast<long long>(sh.H), static_cast<long long>(sh.D), kernel, n);
        INFO(spec << " at S " << sh.S << ", H " << sh.H << ", D " << sh.D);
        REQUIRE(dev.out.shape == host.out.shape);
        CHECK(dev.stats["kernel"] == kernel);
        CHECK(n == 0);
      }
    }
  }
}

TEST_CASE("sage2_cuda: kernel=auto takes the tc kernel where it can, simt elsewhere; kernel=tc says why not") {
  std::string why;
  if (!ts::cuda::device_available(&why)) {
    std::cout << "skipped: no CUDA device (" << why << ")\n";
    return;
  }
  const bool tc_here = ts::cuda::sage2_tc_unsupported(1, 128, 64).empty();
  // Head dim 48: no tc kernel; auto falls back to simt with the host's bits.
  const ts::testing::Inputs in48 = ts::testing::make_inputs(70, 2, 48, 5);
  const ts::AttentionProblem p48 = in48.problem();
  const ts::AttentionResult host = ts::make_attention_backend("sage2:preset=sm121", {})->run(p48);
  const ts::AttentionResult dev = ts::make_attention_backend("sage2_cuda:preset=sm121", {})->run(p48);
  CHECK(dev.stats["kernel"] == "simt");
  CHECK(differing(dev.out, host.out) == 0);
  try {
    ts::make_attention_backend("sage2_cuda:preset=sm121,kernel=tc", {})->run(p48);
    FAIL("kernel=tc ran at head dim 48");
  } catch (const ts::InputError& e) {
    CHECK(std::string(e.what()).find("head dim 48") != std::string::npos);
  }
  // Head dim 128: auto takes tc on a compute capability 9.0+ device.
  const ts::testing::Inputs in128 = ts::testing::make_inputs(70, 1, 128, 6);
  const ts::AttentionResult d128 = ts::make_attention_backend("sage2_cuda", {})->run(in128.problem());
  CHECK(d128.stats["kernel"] == (tc_here ? "tc" : "simt"));
  // A chosen kernel names its output, so both can be stored side by side.
  CHECK(ts::make_attention_backend("sage2_cuda:preset=sm121,kernel=simt", {})->name() ==
        "sage2_cuda_sm121_kernel-simt");
  CHECK(ts::make_attention_backend("sage2_cuda:preset=sm121", {})->name() == "sage2_cuda_sm121");
  CHECK_THROWS_AS(ts::make_attention_backend("sage2_cuda:kernel=fast", {}), ts::InputError);
}
