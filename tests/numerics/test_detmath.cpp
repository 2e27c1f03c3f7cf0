#include <cmath>
#include <cstdint>
#include <cstring>

#include "catch.hpp"
#include "reference/numerics/detmath.hpp"

namespace {
// Distance in doubles between a and b (both finite, same sign).
int64_t ulps(double a, double b) {
  int64_t ia, ib;
  std::memcpy(&ia, &a, 8);
  std::memcpy(&ib, &b, 8);
  return ia > ib ? ia - ib : ib - ia;
}
// Compares against long double libm, which is accurate well past double.
template <typename F, typename G>
int64_t worst_ulps(F ours, G ref, double lo, double hi, int n) {
  int64_t worst = 0;
  for (int i = 0; i <= n; ++i) {
    const double x = lo + (hi - lo) * i / n;
    const double want = static_cast<double>(ref(static_cast<long double>(x)));
    if (want == 0 || std::fabs(want) < 1e-300) continue;
    worst = std::max(worst, ulps(ours(x), want));
  }
  return worst;
}
}  // namespace

TEST_CASE("detmath exp, exp2, log are within 2 ulp of long double libm") {
  namespace dm = ts::detmath;
  CHECK(worst_ulps([](double x) { return dm::exp(x); }, [](long double x) { return expl(x); }, -700,
                   700, 200001) <= 2);
  CHECK(worst_ulps([](double x) { return dm::exp(x); }, [](long double x) { return expl(x); }, -1, 1,
                   200001) <= 2);
  CHECK(worst_ulps([](double x) { return dm::exp2(x); }, [](long double x) { return exp2l(x); }, -60,
                   60, 200001) <= 2);
  CHECK(worst_ulps([](double x) { return dm::log(x); }, [](long double x) { return logl(x); }, 1e-6,
                   1e6, 200001) <= 2);
  CHECK(worst_ulps([](double x) { return dm::log(x); }, [](long double x) { return logl(x); }, 0.5,
                   2.0, 200001) <= 2);
  CHECK(dm::exp(0.0) == 1.0);
  CHECK(dm::exp2(3.0) == 8.0);
  CHECK(dm::exp2(-1074.0) == std::ldexp(1.0, -1074));
  CHECK(dm::log(1.0) == 0.0);
  CHECK(dm::exp(-INFINITY) == 0.0);
  CHECK(std::isinf(dm::exp(710.0)));
  CHECK(std::isnan(dm::exp(NAN)));
  CHECK(std::isnan(dm::log(-1.0)));
}

TEST_CASE("detmath sin and cos are within 2 ulp away from their zeros") {
  namespace dm = ts::detmath;
  int64_t worst = 0;
  double max_abs = 0;
  for (int i = 0; i <= 400000; ++i) {
    const double x = -2000.0 + 4000.0 * i / 400000;
    const long double sl = sinl(x), cl = cosl(x);
    // Near a zero the relative error of any double argument is unbounded; judge absolute there.
    if (fabsl(sl) > 1e-3L) worst = std::max(worst, ulps(dm::sin(x), static_cast<double>(sl)));
    if (fabsl(cl) > 1e-3L) worst = std::max(worst, ulps(dm::cos(x), static_cast<double>(cl)));
    max_abs = std::max(max_abs, std::fabs(dm::sin(x) - static_cast<double>(sl)));
  }
  CHECK(worst <= 2);
  CHECK(max_abs < 1e-15);
  CHECK(dm::sin(0.0) == 0.0);
  CHECK(dm::cos(0.0) == 1.0);
}

TEST_CASE("detmath pow matches theta^(-i/F) as RoPE uses it") {
  for (int i = 0; i < 16; ++i) {
    const double want = static_cast<double>(powl(10000.0L, -static_cast<long double>(i) / 16.0L));
    CHECK(ulps(ts::detmath::pow(10000.0, -i / 16.0), want) <= 16);
  }
}
