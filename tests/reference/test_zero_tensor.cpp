#include <cmath>
#include <cstring>

#include "catch.hpp"
#include "reference/zero_tensor.hpp"

namespace {
// Every element +0.0 (bit pattern zero), shape and dtype as asked.
void check_zeros(const ts::Tensor& t, std::vector<int64_t> shape, ts::DType dtype) {
  CHECK(t.shape == shape);
  CHECK(t.dtype == dtype);
  REQUIRE(t.data.size() == static_cast<size_t>(t.numel()));
  size_t nonzero = 0;
  for (double x : t.data) {
    uint64_t bits;
    std::memcpy(&bits, &x, sizeof bits);
    nonzero += bits != 0;
  }
  CHECK(nonzero == 0);
}
}  // namespace

TEST_CASE("zero_tensor: small tensors are Tensor(shape, dtype)") {
  check_zeros(ts::zero_tensor({3, 5, 7}, ts::DType::f32), {3, 5, 7}, ts::DType::f32);
  check_zeros(ts::zero_tensor({0, 4}, ts::DType::f64), {0, 4}, ts::DType::f64);
}

TEST_CASE("zero_tensor: a tensor past one 64 MB slice, its last slice partial, after memory was reused") {
  // Freed and taken again, the memory may hold old values; the result must still be zeros.
  {
    ts::Tensor junk({9'000'001}, ts::DType::f64);
    for (double& x : junk.data) x = -1.5;
  }
  const std::vector<int64_t> shape{3, 1'000'003, 3};  // 72 MB: one whole slice and a partial one
  check_zeros(ts::zero_tensor(shape, ts::DType::f64), shape, ts::DType::f64);
}

TEST_CASE("zero_fill: a vector in use comes back as n zeros, shorter or longer than before") {
  std::vector<float> v(1000, 7.0f);
  ts::zero_fill(v, 10);
  CHECK(v == std::vector<float>(10, 0.0f));
  v.assign(10, -3.0f);
  ts::zero_fill(v, 20'000'000);  // 80 MB: populated in slices
  REQUIRE(v.size() == 20'000'000u);
  size_t nonzero = 0;
  for (float x : v) nonzero += x != 0.0f || std::signbit(x);
  CHECK(nonzero == 0);
  std::vector<int8_t> codes{1, 2, 3};
  ts::zero_fill(codes, 0);
  CHECK(codes.empty());
}
