// Verdicts for every rule kind: pass, fail and the boundary (a figure equal
// to its bound passes); NaN and all-zero candidates; missing and undefined
// figures; speed intervals; candidates that crashed.
#include <cmath>
#include <limits>

#include "catch.hpp"
#include "gates/judge_for_tests.hpp"
#include "core/error.hpp"
#include "gates/gate_file.hpp"
#include "gates/metrics.hpp"
#include "gates/verdict.hpp"

using namespace ts;

namespace {
GateFile gate_of(const std::string& rules) {
  return parse_gate(R"({"schema": "touchstone.gate/1", "name": "t", "rules": [)" + rules + "]}", "t.json");
}
Evidence with(const std::string& against, const std::string& metric, double v) {
  Evidence e;
  e.candidate = std::string("cand");
  (against == "exact" ? e.vs_exact : e.vs_baseline)["attention"][metric] = v;
  return e;
}
const RuleOutcome& outcome(const CandidateVerdict& v, const std::string& id) {
  for (const auto& o : v.outcomes)
    if (o.id == id) return o;
  FAIL("no outcome " << id);
  return v.outcomes.front();
}
SpeedEvidence single(double cand_ms, double base_ms) {
  SpeedEvidence s;
  s.candidate_ms = cand_ms;
  s.baseline_ms = base_ms;
  s.single_figure = true;
  return s;
}
}  // namespace

TEST_CASE("max bound: below, equal (passes) and above") {
  const GateFile g = gate_of(R"({"id": "sage_like", "metric": "rel_l2", "max": 0.05})");
  CHECK(judge_for_test(g, with("baseline", "rel_l2", 0.04), "r").verdict == Verdict::accept);
  CHECK(judge_for_test(g, with("baseline", "rel_l2", 0.05), "r").verdict == Verdict::accept);
  const auto v = judge_for_test(g, with("baseline", "rel_l2", 0.626), "touchstone gate ...");
  CHECK(v.verdict == Verdict::reject);
  CHECK(outcome(v, "sage_like").status == RuleStatus::fail);
  CHECK(*outcome(v, "sage_like").figure == 0.626);
  CHECK(outcome(v, "sage_like").message.find("0.626 > max 0.05") != std::string::npos);
  CHECK(v.repro == "touchstone gate ...");
  CHECK(judge_for_test(g, with("baseline", "rel_l2", 0.04), "r").repro.empty());
}

TEST_CASE("min bound: above, equal (passes) and below") {
  const GateFile g = gate_of(R"({"id": "direction", "metric": "cosine", "min": 0.998})");
  CHECK(judge_for_test(g, with("baseline", "cosine", 0.9995), "").verdict == Verdict::accept);
  CHECK(judge_for_test(g, with("baseline", "cosine", 0.998), "").verdict == Verdict::accept);
  CHECK(judge_for_test(g, with("baseline", "cosine", 0.99), "").verdict == Verdict::reject);
}

TEST_CASE("max_ratio_to_baseline against exact") {
  const GateFile g = gate_of(R"({"id": "vs_exact", "metric": "rel_l2", "against": "exact", "max_ratio_to_baseline": 2.0})");
  Evidence e = with("exact", "rel_l2", 0.02);
  e.baseline_vs_exact["attention"]["rel_l2"] = 0.01;
  CHECK(judge_for_test(g, e, "").verdict == Verdict::accept);  // equal to 2 x 0.01
  e.vs_exact["attention"]["rel_l2"] = 0.0201;
  const auto v = judge_for_test(g, e, "");
  CHECK(v.verdict == Verdict::reject);
  CHECK(outcome(v, "vs_exact").message.find("x baseline's 0.01") != std::string::npos);
  e.vs_exact["attention"]["rel_l2"] = 0.015;
  CHECK(judge_for_test(g, e, "").verdict == Verdict::accept);
  e.baseline_vs_exact.clear();
  const auto m = judge_for_test(g, e, "");
  CHECK(m.verdict == Verdict::inconclusive);
  CHECK(outcome(m, "vs_exact").message.find("baseline rel_l2 vs exact") != std::string::npos);
}

TEST_CASE("max_ratio_to_baseline against a baseline of no error: not judged, never a REJECT of a good kernel") {
  const GateFile g = gate_of(R"({"id": "vs_exact", "metric": "rel_l2", "against": "exact", "max_ratio_to_baseline": 1.5})");
  Evidence e = with("exact", "rel_l2", 0.001654);  // a correct bf16 kernel
  e.baseline_vs_exact["attention"]["rel_l2"] = 0.0;  // the baseline is the exact reference
  const auto v = judge_for_test(g, e, "");
  CHECK(v.verdict == Verdict::inconclusive);
  CHECK(outcome(v, "vs_exact").status == RuleStatus::missing);
  CHECK(outcome(v, "vs_exact").message.find("is 0: max_ratio_to_baseline bounds nothing") != std::string::npos);
}

TEST_CASE("one list of verdicts: names, parsing and the summaries' counts") {
  std::vector<std::string> names;
  for (const auto& w : verdict_table()) names.push_back(w.name);
  CHECK(names == std::vector<std::string>{"ACCEPT", "REJECT", "INCONCLUSIVE", "MISTRUSTED"});
  for (const auto& w : verdict_table()) CHECK(verdict_from_name(w.name, "r") == w.verdict);
  CHECK_THROWS_WITH(verdict_from_name("MAYBE", "r.json"), Catch::Contains("unknown verdict 'MAYBE'"));
  std::vector<CandidateVerdict> cs(3);
  cs[0].verdict = Verdict::mistrusted;
  cs[1].verdict = Verdict::accept;
  cs[2].verdict = Verdict::mistrusted;
  const VerdictCounts c = count_verdicts(cs);
  CHECK(c.total == 3);
  CHECK(c.text(false) == "1 accepted, 0 rejected, 0 inconclusive, 2 mistrusted");
  CHECK(c.text(true) == "1 ACCEPT, 0 REJECT, 0 INCONCLUSIVE, 2 MISTRUSTED");
  CHECK(c.to_json() == nlohmann::json{{"accept", 1}, {"reject", 0}, {"inconclusive", 0}, {"mistrusted", 2}});
  // Without a MISTRUSTED candidate the summaries read as they did before it existed.
  CHECK(count_verdicts({cs[1]}).text(false) == "1 accepted, 0 rejected, 0 inconclusive");
}

TEST_CASE("ulp_max and nonfinite rules (bit_exact)") {
  const GateFile g = load_gate("bit_exact");
  Evidence e = with("baseline", "ulp_max", 0);
  e.vs_baseline["attention"]["nonfinite"] = 0;
  CHECK(judge_for_test(g, e, "").verdict == Verdict::accept);
  e.vs_baseline["attention"]["ulp_max"] = 1;
  CHECK(judge_for_test(g, e, "").verdict == Verdict::reject);
}

TEST_CASE("NaN never passes: a candidate with NaN fails every accuracy rule") {
  Tensor b({64}, DType::f32), a({64}, DType::f32);
  for (int i = 0; i < 64; ++i) b.data[static_cast<size_t>(i)] = a.data[static_cast<size_t>(i)] = 1.0 + i;
  a.data[5] = std::numeric_limits<double>::quiet_NaN();
  const GateFile g = gate_of(R"({"id": "sage_like", "metric": "rel_l2", "max": 0.05},
                               {"id": "abs", "metric": "max_abs", "max": 1e9},
                               {"id": "direction", "metric": "cosine", "min": -1})");
  Evidence e;
  e.candidate = std::string("nan");
  e.vs_baseline["attention"] = metric_map(compute_metrics(a, b));
  const auto v = judge_for_test(g, e, "");
  CHECK(v.verdict == Verdict::reject);
  for (const char* id : {"sage_like", "abs", "direction", "finite_guard"}) {
    CHECK(outcome(v, id).status == RuleStatus::fail);
  }
  CHECK(outcome(v, "sage_like").message.find("non-finite") != std::string::npos);
  // A figure that is NaN on its own also fails.
  CHECK(judge_for_test(g, with("baseline", "rel_l2", std::nan("")), "").verdict == Verdict::reject);
}

TEST_CASE("an all-zero candidate is rejected by the zero guard on any gate") {
  Tensor b({100}, DType::f32), a({100}, DType::f32);
  for (int i = 0; i < 100; ++i) b.data[static_cast<size_t>(i)] = 0.001 * (i + 1);
  // rel_l2 of zeros vs b is exactly 1: a gate that allowed it would pass it.
  const GateFile g = gate_of(R"({"id": "loose", "metric": "rel_l2", "max": 1.0})");
  Evidence e;
  e.candidate = std::string("zeros");
  e.vs_baseline["attention"] = metric_map(compute_metrics(a, b));
  const auto v = judge_for_test(g, e, "");
  CHECK(outcome(v, "loose").status == RuleStatus::pass);
  CHECK(outcome(v, "zero_guard").status == RuleStatus::fail);
  CHECK(v.verdict == Verdict::reject);
  // Both zero: no excess, guard passes; rel_l2 undefined -> INCONCLUSIVE.
  Evidence z;
  z.candidate = std::string("zeros");
  z.vs_baseline["attention"] = metric_map(compute_metrics(a, a));
  const auto w = judge_for_test(g, z, "");
  CHECK(outcome(w, "zero_guard").status == RuleStatus::pass);
  CHECK(outcome(w, "loose").status == RuleStatus::missing);
  CHECK(outcome(w, "loose").message.find("undefined") != std::string::npos);
  CHECK(w.verdict == Verdict::inconclusive);
}

TEST_CASE("missing measurements: INCONCLUSIVE naming them unless optional; failure outranks") {
  const GateFile g = load_gate("sparse_acceptance");
  Evidence e;
  e.candidate = std::string("c");
  e.speed = single(100, 200);
  auto v = judge_for_test(g, e, "");
  CHECK(v.verdict == Verdict::inconclusive);
  CHECK(outcome(v, "sage_like").message == "missing measurement: rel_l2 vs baseline (attention)");
  e.speed = single(300, 200);
  CHECK(judge_for_test(g, e, "").verdict == Verdict::reject);  // failed speed outranks missing rel_l2
  const GateFile opt = gate_of(R"({"id": "sage_like", "metric": "rel_l2", "max": 0.05},
                                 {"id": "fast", "metric": "speedup", "min": 1, "optional": true})");
  CHECK(judge_for_test(opt, with("baseline", "rel_l2", 0.01), "").verdict == Verdict::accept);
}

TEST_CASE("speed on single figures: faster passes, slower fails, equal cannot decide") {
  const GateFile g = load_gate("sparse_acceptance");
  Evidence e = with("baseline", "rel_l2", 0.01);
  e.speed = single(141.8, 259.9);
  auto v = judge_for_test(g, e, "");
  CHECK(v.verdict == Verdict::accept);
  CHECK(*outcome(v, "faster").figure == Approx(259.9 / 141.8));
  bool said = false;
  for (const auto& n : v.notes) said |= n.find("single figures") != std::string::npos;
  CHECK(said);
  e.speed = single(947.9, 259.9);
  v = judge_for_test(g, e, "");
  CHECK(v.verdict == Verdict::reject);
  CHECK(outcome(v, "faster").message.find("947.9 ms vs baseline 259.9 ms") != std::string::npos);
  e.speed = single(259.9, 259.9);
  CHECK(judge_for_test(g, e, "").verdict == Verdict::inconclusive);
}

TEST_CASE("speed intervals: above, straddling (INCONCLUSIVE), below and at the bound") {
  const GateFile g = gate_of(R"({"id": "faster", "metric": "speedup", "min": 1.0})");
  auto run = [&](double lo, double pt, double hi) {
    Evidence e;
    e.candidate = std::string("c");
    SpeedEvidence s;
    Interval iv;
    iv.lower = lo;
    iv.point = pt;
    iv.upper = hi;
    s.interval = iv;
    e.speed = s;
    return judge_for_test(g, e, "").verdict;
  };
  CHECK(run(1.2, 1.5, 1.8) == Verdict::accept);
  CHECK(run(1.0, 1.2, 1.4) == Verdict::accept);  // lower bound at min passes
  CHECK(run(0.9, 1.05, 1.2) == Verdict::inconclusive);
  CHECK(run(0.5, 0.6, 0.7) == Verdict::reject);
  CHECK(run(std::nan(""), 1, 2) == Verdict::reject);
}

TEST_CASE("a crashed candidate is REJECT with its error") {
  const GateFile g = load_gate("sparse_acceptance");
  Evidence e;
  e.candidate = std::string("broken");
  e.error = "sol: out of memory";
  const auto v = judge_for_test(g, e, "touchstone gate --candidate broken");
  CHECK(v.verdict == Verdict::reject);
  CHECK(outcome(v, "run").message == "candidate failed: sol: out of memory");
  CHECK(v.repro == "touchstone gate --candidate broken");
}

TEST_CASE("run exit code: 0 only when every candidate is accepted") {
  GateRun run;
  run.gate = load_gate("sparse_acceptance");
  CandidateVerdict a, b;
  a.verdict = Verdict::accept;
  b.verdict = Verdict::inconclusive;
  run.candidates = {a};
  CHECK(run.exit_code() == 0);
  run.candidates = {a, b};
  CHECK(run.exit_code() == 1);
  CHECK(run.to_json()["summary"]["inconclusive"] == 1);
}

TEST_CASE("bit_exact between storage types is an error that says so; a tolerance is judged") {
  const ts::GateFile bit = ts::load_gate("bit_exact");
  auto evidence = [](ts::DType a, ts::DType b) {
    ts::Tensor x({3}, a), y({3}, b);
    x.data = {1.0, 2.0, 3.0};
    y.data = {1.0, 2.0, 3.0};
    ts::Evidence ev;
    ev.candidate = "k";
    ev.vs_baseline["attention"] = ts::metric_map(ts::compute_metrics(x, y));
    ev.vs_exact["attention"] = ev.vs_baseline["attention"];
    return ev;
  };
  try {
    ts::judge_for_test(bit, evidence(ts::DType::f64, ts::DType::bf16), "");
    FAIL("no error");
  } catch (const ts::InputError& e) {
    const std::string m = e.what();
    CHECK(m.find("rule 'bit_exact' (ulp_max vs baseline <= 0) claims bit-exactness") != std::string::npos);
    CHECK(m.find("'k' is stored as float64 and the baseline as bfloat16") != std::string::npos);
  }
  CHECK(ts::judge_for_test(bit, evidence(ts::DType::bf16, ts::DType::bf16), "").verdict == ts::Verdict::accept);
  // A bound of some ulps is judged on the rounded figure, as stated.
  const ts::GateFile within = ts::parse_gate(R"({"schema": "touchstone.gate/1", "name": "w", "rules": [
      {"id": "close", "metric": "ulp_max", "max": 2}]})", "w.json");
  CHECK(ts::judge_for_test(within, evidence(ts::DType::f64, ts::DType::bf16), "").verdict == ts::Verdict::accept);
  // Figures without types (a measurements file) are judged as they are.
  ts::Evidence measured;
  measured.candidate = "m";
  measured.vs_baseline["attention"] = {{"ulp_max", 0.0}, {"nonfinite", 0.0}};
  CHECK_NOTHROW(ts::judge_for_test(bit, measured, ""));
}
