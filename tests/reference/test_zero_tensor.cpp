#include <sys/mman.h>
#include <unistd.h>

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

TEST_CASE("zero_tensor: a tensor past one 64 MB slice, its last slice partial") {
  const std::vector<int64_t> shape{3, 1'000'003, 3};  // 72 MB: one whole slice and a partial one
  check_zeros(ts::zero_tensor(shape, ts::DType::f64), shape, ts::DType::f64);
}

TEST_CASE("populate_pages makes the pages of a fresh mapping resident and leaves its contents alone") {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE)), bytes = size_t{130} << 20;
  void* m = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  REQUIRE(m != MAP_FAILED);
  auto* bytes_at = static_cast<unsigned char*>(m);
  bytes_at[page * 7] = 42;  // one page touched before
  std::vector<unsigned char> resident(bytes / page);
  const auto count = [&] {
    REQUIRE(mincore(m, bytes, resident.data()) == 0);
    size_t n = 0;
    for (unsigned char r : resident) n += r & 1u;
    return n;
  };
  CHECK(count() < resident.size() / 2);
  CHECK_FALSE(ts::populate_pages(m, (size_t{64} << 20) - page));  // under one slice: not asked
  if (ts::populate_pages(m, bytes)) {
    CHECK(count() == resident.size());
  } else {
    WARN("skipped: this kernel refuses MADV_POPULATE_WRITE (Linux < 5.14)");
  }
  CHECK(bytes_at[page * 7] == 42);
  CHECK(bytes_at[page * 8] == 0);
  munmap(m, bytes);
}

TEST_CASE("zero_fill: a vector in use comes back as n zeros, shorter or longer than before") {
  // Its own storage, dirty: a fresh allocation would come zeroed from the kernel whatever zero_fill did.
  std::vector<double> dirty(9'000'027, -1.5);
  const double* before = dirty.data();
  ts::zero_fill(dirty, dirty.size());
  REQUIRE(dirty.data() == before);
  size_t left = 0;
  for (double x : dirty) left += x != 0.0 || std::signbit(x);
  CHECK(left == 0);
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
