// The split of a plan's work (drivers/batch_plan.hpp): units by (fixture, gate,
// baseline), split while there are fewer units than workers, and the
// deterministic greedy LPT every rank and array task computes alike.
#include <string>
#include <vector>

#include "catch.hpp"
#include "drivers/batch_plan.hpp"

namespace {

ts::BatchPlan plan_of(const std::vector<std::pair<std::string, double>>& cases, double shared) {
  ts::BatchPlan p;
  for (size_t i = 0; i < cases.size(); ++i) {
    ts::BatchCase c;
    c.id = "c" + std::to_string(i);
    c.fixture = cases[i].first;
    c.gate = "bit_exact";
    c.baseline = "sage2";
    c.candidate = "cand" + std::to_string(i);
    c.cost_s = cases[i].second;
    p.cases.push_back(c);
    p.group_cost_s.push_back(shared);
  }
  return p;
}

}  // namespace

TEST_CASE("batch work units: one per fixture, gate and baseline; split while workers would idle") {
  const ts::BatchPlan p = plan_of({{"a", 1}, {"a", 2}, {"b", 4}, {"a", 3}, {"b", 1}}, 10);
  const auto one = ts::work_units(p, 1);
  REQUIRE(one.size() == 2);
  CHECK(one[0].cases == std::vector<size_t>{0, 1, 3});
  CHECK(one[0].cost_s == Approx(16));
  CHECK(one[1].cases == std::vector<size_t>{2, 4});
  CHECK(one[1].cost_s == Approx(15));
  // Four workers: the costliest unit of several cases is halved, each half paying the shared
  // work: a (16) into {0} (11) and {1, 3} (15); then {1, 3} (15, first of the two at 15).
  const auto four = ts::work_units(p, 4);
  REQUIRE(four.size() == 4);
  CHECK(four[0].cases == std::vector<size_t>{0});
  CHECK(four[1].cases == std::vector<size_t>{1});
  CHECK(four[2].cases == std::vector<size_t>{3});
  CHECK(four[3].cases == std::vector<size_t>{2, 4});
  CHECK(four[0].cost_s == Approx(11));
  CHECK(four[2].cost_s == Approx(13));
  CHECK(four[3].cost_s == Approx(15));
  // Nothing left to split: fewer units than workers.
  CHECK(ts::work_units(p, 9).size() == 5);
}

TEST_CASE("batch shards: greedy LPT, largest first, ties to the lowest shard, same answer every time") {
  std::vector<ts::WorkUnit> units;
  for (double c : {5.0, 9.0, 2.0, 7.0, 4.0, 7.0}) units.push_back({{}, c});
  const auto s = ts::assign_shards(units, 2);
  // Order 9 (u1), 7 (u3), 7 (u5), 5 (u0), 4 (u4), 2 (u2):
  // 9->0; 7->1; 7->1 (7 < 9); 5->0 (9 < 14); 4->0 (14 = 14: lowest); 2->1 (18 > 14).
  CHECK(s == std::vector<int>{0, 0, 1, 1, 0, 1});
  CHECK(ts::assign_shards(units, 2) == s);
  CHECK(ts::assign_shards(units, 1) == std::vector<int>(6, 0));
  const auto many = ts::assign_shards(units, 8);
  CHECK(many == std::vector<int>{3, 0, 5, 1, 4, 2});
  CHECK_THROWS(ts::assign_shards(units, 0));
}
