// Importing the seed report and gating it with the default gate reaches the
// report's own conclusion; modified copies give the verdicts their numbers imply.
#include "catch.hpp"
#include "gates/judge_for_tests.hpp"
#include "core/error.hpp"
#include "gates/json_input.hpp"
#include "seed_support.hpp"

using namespace ts;
using ts::test::find;

TEST_CASE("the test copy of the seed is the shared seed") {
  const std::string shared = std::string(TOUCHSTONE_SOURCE_DIR) + "/../shared/seed/gb10_sage2_vs_sol_block24.json";
  std::ifstream probe(shared);
  if (probe) CHECK(json_input::read_file(shared) == test::seed_json());
}

TEST_CASE("import maps the seed's levels with normalised backend names") {
  const MeasurementsFile m = import_report_file(test::seed_path());
  const auto names = m.backends();
  const std::vector<std::string> want{"sage2", "sol_bf16_tau_1_3", "sol_int8_qk_tau_1_3",
                                      "sol_int8_qk_pv_tau_1_3", "sol_fully_dense_tau_minus_100"};
  for (const auto& w : want) CHECK(std::find(names.begin(), names.end(), w) != names.end());
  CHECK(names.size() == want.size());
  auto get = [&](const std::string& b, const std::string& level, const std::string& q) -> const Measurement* {
    for (const auto& e : m.entries)
      if (e.backend == b && e.level == level && e.quantity == q) return &e;
    return nullptr;
  };
  REQUIRE(get("sage2", "block", "attention"));
  CHECK(get("sage2", "block", "attention")->value == 259.942);
  CHECK(get("sage2", "block", "attention")->unit == "ms");
  CHECK(get("sage2", "block", "attention")->statistic == "p50");
  REQUIRE(get("sol_bf16_tau_1_3", "quality", "rel_l2"));
  CHECK(get("sol_bf16_tau_1_3", "quality", "rel_l2")->against == "sage2");
  CHECK(get("sol_bf16_tau_1_3", "quality", "rel_l2")->raw_backend == "sol_bf16_tau_1_3_exact_conditioning_kv");
  REQUIRE(get("sol_bf16_tau_1_3", "attention_internal", "total"));
  CHECK(get("sol_bf16_tau_1_3", "attention_internal", "total")->value == 150.741);
  REQUIRE(get("sol_fully_dense_tau_minus_100", "attention_variant", "attention"));
  CHECK(get("sol_fully_dense_tau_minus_100", "attention_variant", "attention")->value == 947.901);
  REQUIRE(get("sage2", "sampling", "sampling_uninstrumented_two_step"));
  CHECK(get("sage2", "sampling", "sampling_uninstrumented_two_step")->unit == "s");
  REQUIRE(get("sol_int8_qk_tau_1_3", "sampling_stage", "denoiser"));
  CHECK(m.context["device"] == "NVIDIA GB10");
  // The written file reads back as it was.
  const MeasurementsFile back = parse_measurements(m.to_json().dump(), "m.json");
  CHECK(back.to_json() == m.to_json());
}

TEST_CASE("the seed with the default gate: nothing accepted, each for its reason") {
  const GateRun run = test::judge_report(test::seed_json());
  CHECK(run.baseline == "sage2");
  REQUIRE(run.candidates.size() == 4);
  CHECK(run.exit_code() == 1);
  for (const auto& c : run.candidates) CHECK(c.verdict != Verdict::accept);

  for (const char* name : {"sol_bf16_tau_1_3", "sol_int8_qk_tau_1_3"}) {
    const auto* c = find(run, name);
    REQUIRE(c);
    CHECK(c->verdict == Verdict::reject);
    CHECK(c->outcomes[0].id == "sage_like");
    CHECK(c->outcomes[0].status == RuleStatus::fail);
    CHECK(*c->outcomes[0].figure == Approx(0.626).epsilon(1e-3));
    CHECK(c->outcomes[1].id == "faster");
    CHECK(c->outcomes[1].status == RuleStatus::pass);  // faster, but not Sage-like
    CHECK(*c->outcomes[1].figure > 1.5);
  }
  const auto* bf16 = find(run, "sol_bf16_tau_1_3");
  CHECK(*bf16->outcomes[1].figure == Approx(259.942 / 141.829));

  const auto* dense = find(run, "sol_fully_dense_tau_minus_100");
  REQUIRE(dense);
  CHECK(dense->verdict == Verdict::reject);
  CHECK(dense->outcomes[0].status == RuleStatus::pass);
  CHECK(*dense->outcomes[0].figure == Approx(0.017087));
  CHECK(dense->outcomes[1].status == RuleStatus::fail);
  CHECK(dense->outcomes[1].message.find("947.9 ms vs baseline 259.9 ms") != std::string::npos);

  const auto* pv = find(run, "sol_int8_qk_pv_tau_1_3");
  REQUIRE(pv);
  CHECK(pv->verdict == Verdict::inconclusive);
  CHECK(pv->outcomes[0].status == RuleStatus::missing);
  CHECK(pv->outcomes[0].message == "missing measurement: rel_l2 vs baseline (attention)");
  CHECK(pv->outcomes[1].status == RuleStatus::pass);  // internals total 138.651 vs 258.613
  CHECK(*pv->outcomes[1].figure == Approx(258.613 / 138.651));
  bool single = false;
  for (const auto& n : pv->notes) single |= n.find("single figures") != std::string::npos;
  CHECK(single);
  // The other timing levels are shown beside the deciding one.
  CHECK_FALSE(bf16->details["speed"]["other_levels"].empty());
}

TEST_CASE("modified seeds: faster and Sage-like is accepted, equally fast is not") {
  auto j = test::seed_json();
  j["quality_gates"]["sol_bf16_tau_1_3_exact_conditioning_kv_relative_l2_vs_sage2"] = 0.012;
  GateRun run = test::judge_report(j);
  CHECK(find(run, "sol_bf16_tau_1_3")->verdict == Verdict::accept);
  CHECK(find(run, "sol_int8_qk_tau_1_3")->verdict == Verdict::reject);
  CHECK(run.exit_code() == 1);

  j["representative_block_24_p50_milliseconds"]["sol_bf16_tau_1_3"]["attention"] = 259.942;
  run = test::judge_report(j);
  CHECK(find(run, "sol_bf16_tau_1_3")->verdict != Verdict::accept);
  j["representative_block_24_p50_milliseconds"]["sol_bf16_tau_1_3"]["attention"] = 270.0;
  run = test::judge_report(j);
  CHECK(find(run, "sol_bf16_tau_1_3")->verdict == Verdict::reject);

  // A dense variant made fast enough becomes acceptable; an INT8 P.V quality
  // figure added decides that variant too.
  auto k = test::seed_json();
  k["quality_gates"]["sol_fully_dense_tau_minus_100_p50_milliseconds"] = 200.0;
  k["quality_gates"]["sol_int8_qk_pv_tau_1_3_exact_conditioning_kv_relative_l2_vs_sage2"] = 0.9;
  run = test::judge_report(k);
  CHECK(find(run, "sol_fully_dense_tau_minus_100")->verdict == Verdict::accept);
  CHECK(find(run, "sol_int8_qk_pv_tau_1_3")->verdict == Verdict::reject);
}

TEST_CASE("a renamed backend and baseline are handled generically") {
  auto j = test::seed_json();
  std::string text = j.dump();
  for (std::string from : {"sol_int8_qk_tau_1_3"}) {
    size_t p;
    while ((p = text.find(from)) != std::string::npos) text.replace(p, from.size(), "fast_kernel_v2");
  }
  const GateRun run = test::judge_report(nlohmann::json::parse(text));
  const auto* c = find(run, "fast_kernel_v2");
  REQUIRE(c);
  CHECK(c->verdict == Verdict::reject);
  CHECK(c->outcomes[0].status == RuleStatus::fail);
}

TEST_CASE("import errors name the report and path") {
  CHECK_THROWS_AS(import_report("{\"x\": 1}", "r.json"), InputError);
  try {
    import_report(R"({"attention_internal_p50_milliseconds": {"a": {"total": -1}}})", "r.json");
    FAIL("no error");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()) == "r.json: attention_internal_p50_milliseconds.a.total: a timing must be a positive number");
  }
  CHECK_THROWS_AS(import_report_file("/nonexistent/report.json"), InputError);
  CHECK_THROWS_AS(import_report("{bad", "r.json"), InputError);
}

TEST_CASE("a timing named like a metric is refused, not written as a metric without a reference") {
  // Found by fuzz_import_report: "sampling_stage_step_2_seconds": {"sage2": {"mean_abs": 25.4}}
  // imported, and `gate -m` then refused what import-report had written.
  for (const char* report :
       {R"({"sampling_stage_step_2_seconds": {"sage2": {"mean_abs": 25.4}}})",
        R"({"attention_internal_p50_milliseconds": {"a": {"rel_l2": 1.5}}})"}) {
    INFO(report);
    try {
      import_report(report, "r.json");
      FAIL("no error");
    } catch (const InputError& e) {
      CHECK(std::string(e.what()).rfind("r.json: ", 0) == 0);
      CHECK(std::string(e.what()).find("which is a quality metric's name") != std::string::npos);
    }
  }
  // The same stage under another name imports.
  CHECK(import_report(R"({"sampling_stage_step_2_seconds": {"sage2": {"denoiser": 25.4}}})", "r.json")
            .entries.size() == 1);
}

TEST_CASE("measurements with samples are judged on a bootstrap interval") {
  const std::string text = R"({"schema": "touchstone.measurements/1", "entries": [
    {"backend": "sage2", "quantity": "attention", "value": 10, "unit": "ms", "level": "block", "provenance": "t", "samples": [10, 10.2, 9.9, 10.1, 10]},
    {"backend": "k", "quantity": "attention", "value": 5, "unit": "ms", "level": "block", "provenance": "t", "samples": [5, 5.1, 4.9, 5.05, 5]},
    {"backend": "k", "quantity": "rel_l2", "against": "sage2", "value": 0.01, "unit": "", "level": "quality", "provenance": "t"}]})";
  const MeasurementsFile m = parse_measurements(text, "m.json");
  const GateFile g = load_gate("sparse_acceptance");
  const auto v = judge_for_test(g, evidence_from_measurements(m, g, "sage2", "k", 5), "");
  CHECK(v.verdict == Verdict::accept);
  REQUIRE(v.outcomes[1].interval.has_value());
  CHECK(v.outcomes[1].interval->lower > 1.8);
}

TEST_CASE("malformed measurements name the path") {
  auto err = [](const std::string& t) {
    try {
      parse_measurements(t, "m.json");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  const std::string head = R"({"schema": "touchstone.measurements/1", "entries": [)";
  CHECK(err(head + R"({"backend": "a", "quantity": "attention", "value": "5", "unit": "ms", "level": "block", "provenance": "p"}]})") ==
        "m.json: entries[0].value: expected a number, got string");
  CHECK(err(head + R"({"backend": "a", "quantity": "attention", "value": 5, "unit": "ms", "level": "block", "provenance": "p", "x": 1}]})") ==
        "m.json: entries[0].x: unknown key (keys: against, backend, level, provenance, quantity, raw_backend, "
        "samples, statistic, tensor, unit, value)");
  CHECK(err(head + R"({"backend": "a", "quantity": "rel_l2", "value": 5, "unit": "", "level": "q", "provenance": "p"}]})") ==
        "m.json: entries[0].against: missing (a metric is measured against a backend or \"exact\")");
  CHECK(err(head + R"({"backend": "a", "quantity": "attention", "value": 5, "unit": "min", "level": "block", "provenance": "p"}]})").rfind(
            "m.json: entries[0].unit:", 0) == 0);
  CHECK(err(head + "]}") == "m.json: entries: must hold at least one measurement");
  CHECK(err(R"({"schema": "x", "entries": []})") == "m.json: schema: expected \"touchstone.measurements/1\", got \"x\"");
}
