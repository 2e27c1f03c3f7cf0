// Vector types wider than SSE2 only ever live inside the functions built for
// their instruction set below (reference/lanes.hpp says why that is safe).
#pragma GCC diagnostic ignored "-Wpsabi"

#include "reference/sol_lanes.hpp"

#include <algorithm>
#include <string>

#include "core/error.hpp"
#include "reference/lanes.hpp"
#include "reference/sol_arith.hpp"

namespace ts::sol_lanes {
namespace {

// D: the machine's double lanes (SSE2 v2d, AVX2 v4d).
template <class D>
TS_TILE float exp_and_sum_impl(float* x, int64_t n, float m, float sum) {
  constexpr int W = lanes::Lanes<D>::W;
  int64_t j = 0;
  for (; j + W <= n; j += W) {
    D xd;
    for (int l = 0; l < W; ++l) xd[l] = static_cast<double>(x[j + l] - m);
    const D e = lanes::exp_lanes(xd);
    for (int l = 0; l < W; ++l) sum += (x[j + l] = static_cast<float>(e[l]));
  }
  for (; j < n; ++j) sum += (x[j] = sol::expf_det(x[j] - m));
  return sum;
}

float exp_and_sum_sse2(float* x, int64_t n, float m, float sum) {
  return exp_and_sum_impl<lanes::v2d>(x, n, m, sum);
}
#if defined(__x86_64__) || defined(__i386__)
[[gnu::target("avx2")]] float exp_and_sum_avx2(float* x, int64_t n, float m, float sum) {
  return exp_and_sum_impl<lanes::v4d>(x, n, m, sum);
}
#else
// Elsewhere the two-lane path runs for both names: the same bits.
float exp_and_sum_avx2(float* x, int64_t n, float m, float sum) { return exp_and_sum_sse2(x, n, m, sum); }
#endif

}  // namespace

float exp_and_sum(float* x, int64_t n, float m, float sum, Isa isa) {
  const std::vector<Isa> ok = isas_available();
  if (std::find(ok.begin(), ok.end(), isa) == ok.end())
    throw InternalError(std::string("sol emulation: this CPU cannot run the ") + isa_name(isa) + " path");
  return isa == Isa::avx2 ? exp_and_sum_avx2(x, n, m, sum) : exp_and_sum_sse2(x, n, m, sum);
}

float exp_and_sum(float* x, int64_t n, float m, float sum) {
  return best_isa() == Isa::avx2 ? exp_and_sum_avx2(x, n, m, sum) : exp_and_sum_sse2(x, n, m, sum);
}

}  // namespace ts::sol_lanes
