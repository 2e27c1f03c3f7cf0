// touchstone scan's search on planted curves (a function of the shape, no kernel): a cliff
// is located to 1 % in at most a dozen evaluations, a smooth trend is no cliff, a run that
// fails or turns NaN is on the far side of one, and a shape's geometry is valid.
#include <cmath>
#include <limits>

#include "catch.hpp"
#include "core/error.hpp"
#include "drivers/scan.hpp"

using namespace ts;

namespace {

ScanFunction curve(double (*f)(int64_t)) {
  return [f](int64_t x) {
    ScanEvaluation e;
    e.figure = f(x);
    return e;
  };
}

ScanSearchOptions range(int64_t from, int64_t to) {
  ScanSearchOptions o;
  o.from = from;
  o.to = to;
  return o;
}

}  // namespace

TEST_CASE("scan search: a cliff at 160 k tokens in 1 k..200 k located within 1 % in <= 12 evaluations", "[scan]") {
  // SageAttention's FP8 P.V on sm_120: clean at 151 k, noise at 167 k (thu-ml/SageAttention#388).
  for (int64_t cliff : {1500, 20000, 63000, 151000, 160000, 199000}) {
    static int64_t at;
    at = cliff;
    const auto r = scan_search(range(1000, 200000), curve([](int64_t x) {
      return x <= at ? 2e-3 * std::pow(x / 1000.0, 0.3) : 0.9;
    }));
    INFO("cliff " << cliff);
    REQUIRE(r.cliff);
    CHECK(r.cliff->located);
    CHECK(r.evaluations.size() <= 12);
    CHECK(r.cliff->below <= cliff);
    CHECK(r.cliff->above > cliff);
    CHECK(r.cliff->above - r.cliff->below <= std::max<int64_t>(1, r.cliff->below / 100));
  }
}

TEST_CASE("scan search: a smooth rise is a trend, not a cliff", "[scan]") {
  // rel_l2 that grows 100x over the range (linearly in S) is a trend.
  const auto r = scan_search(range(1000, 200000), curve([](int64_t x) { return 1e-4 * x / 1000.0; }));
  CHECK_FALSE(r.cliff);
  CHECK(r.evaluations.size() == 4);
  REQUIRE(r.slope);
  CHECK(*r.slope == Approx(1).margin(1e-6));
}

TEST_CASE("scan search: NaN and failed runs lie past a cliff; a falling cliff is one too", "[scan]") {
  auto nan_above = scan_search(range(128, 4096), [](int64_t x) {
    ScanEvaluation e;
    e.figure = x > 3000 ? std::numeric_limits<double>::quiet_NaN() : 1e-3;
    return e;
  });
  REQUIRE(nan_above.cliff);
  CHECK(nan_above.cliff->below <= 3000);
  CHECK(nan_above.cliff->above > 3000);
  CHECK(nan_above.cliff->above - nan_above.cliff->below <= 30);
  auto fails = scan_search(range(128, 4096), [](int64_t x) {
    ScanEvaluation e;
    if (x > 700) e.error = "out of shared memory";
    else e.figure = 1e-3;
    return e;
  });
  REQUIRE(fails.cliff);
  CHECK(fails.cliff->above > 700);
  CHECK(fails.cliff->below <= 700);
  // Wrong at short lengths, right above: a cliff all the same (FA4's FP8 at kv_len 127 vs 128 reversed).
  auto falling = scan_search(range(64, 8192), curve([](int64_t x) { return x < 1000 ? 0.1 : 1e-3; }));
  REQUIRE(falling.cliff);
  CHECK(falling.cliff->below < 1000);
  CHECK(falling.cliff->above >= 1000);
  CHECK(falling.cliff->located);
  CHECK(falling.cliff->above - falling.cliff->below <= falling.cliff->below / 100);
}

TEST_CASE("scan search: multiples of a tile, the budget, and bad options", "[scan]") {
  auto o = range(128, 8192);
  o.multiple = 128;
  const auto r = scan_search(o, curve([](int64_t x) { return x > 5000 ? 0.5 : 1e-3; }));
  REQUIRE(r.cliff);
  for (const auto& e : r.evaluations) CHECK(e.x % 128 == 0);
  CHECK(r.cliff->below == 4992);
  CHECK(r.cliff->above == 5120);  // one tile
  auto tight = range(1000, 200000);
  tight.budget = 6;
  const auto t = scan_search(tight, curve([](int64_t x) { return x > 160000 ? 0.5 : 1e-3; }));
  REQUIRE(t.cliff);
  CHECK_FALSE(t.cliff->located);
  CHECK(t.evaluations.size() == 6);
  CHECK(t.cliff->text.find("budget") != std::string::npos);
  auto bad = range(100, 50);
  CHECK_THROWS_AS(scan_search(bad, curve([](int64_t) { return 1.0; })), InputError);
  auto few = range(1, 100);
  few.points = 3;
  CHECK_THROWS_AS(scan_search(few, curve([](int64_t) { return 1.0; })), InputError);
  auto odd = range(100, 1000);
  odd.multiple = 64;
  CHECK_THROWS_AS(scan_search(odd, curve([](int64_t) { return 1.0; })), InputError);
}

TEST_CASE("scan config: any length, heads and head dim give a valid video-like geometry", "[scan]") {
  for (int64_t S : {2, 64, 129, 832, 5000, 200000}) {
    const BlockConfig c = scan_config("ci", S, 2, 64);
    CHECK(c.tokens() == S);
    CHECK(c.heads == 2);
    CHECK(c.head_dim == 64);
    CHECK(c.video_tokens() >= 1);
  }
  CHECK(scan_config("ci", 832, 4, 128).video_tokens() == 768);  // the preset's own shape
  CHECK(scan_config("ci", 1000, 1, 32).rope_rot_dims <= 32);
  CHECK_THROWS_AS(scan_config("ci", 100, 1, 33), InputError);
  CHECK_THROWS_AS(scan_config("nope", 100, 1, 32), InputError);
}
