// The block run's backends come from one table (block_backend_kinds): the
// host reference by default, the device mirror by name where built; any
// other name, or the device mirror without a device, is bad input that
// leaves the fixture as it was.
#include <fstream>
#include <iterator>

#include "catch.hpp"
#include "core/error.hpp"
#include "driver_fixtures.hpp"
#include "drivers/block_run.hpp"
#include "drivers/run_estimate.hpp"
#include "kernels_under_test/registry.hpp"

namespace {

std::string bytes_of(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

}  // namespace

TEST_CASE("block run: the backend table names the host block first and the device mirror where built") {
  const auto& kinds = ts::block_backend_kinds();
  REQUIRE(!kinds.empty());
  CHECK(kinds.front().name == "block");
  CHECK_FALSE(kinds.front().device);
  CHECK(kinds.front().run == &ts::run_block);
  bool have_cuda = false;
  for (const auto& k : kinds) have_cuda = have_cuda || k.name == "block_cuda";
#ifdef TOUCHSTONE_HAVE_CUDA
  CHECK(have_cuda);
  CHECK(ts::block_backend("block_cuda").device);
#else
  CHECK_FALSE(have_cuda);
#endif
  CHECK_THROWS_AS(ts::block_backend("block_gpu"), ts::InputError);
}

TEST_CASE("block run: output names and params say which backend ran") {
  const std::string p = ts::test::synth_fixture("tiny_block_run", "tiny", true);
  const ts::BlockRunReport rep = ts::run_block_reference(p, "nvfp4", "te", "exact");
  CHECK(rep.json["output"] == "block_nvfp4-te_exact");
  CHECK_FALSE(rep.json["params"].contains("block_backend"));
  CHECK(rep.json["transfer_ms"] == 0.0);
  ts::BlockOptions bo;
  bo.linear = ts::LinearMode::fp64;
  CHECK(ts::block_output_name(bo, "exact_cuda", "block_cuda") == "block_cuda_fp64_exact_cuda");

  // Bad backend names, and the device mirror without a device: bad input, file untouched.
  const std::string before = bytes_of(p);
  CHECK_THROWS_AS(ts::run_block_reference(p, "fp64", "te", "exact", "block_gpu"), ts::InputError);
  if (!ts::device_present()) {
    CHECK_THROWS_AS(ts::run_block_reference(p, "fp64", "te", "exact", "block_cuda"), ts::InputError);
  }
  CHECK(bytes_of(p) == before);
}
