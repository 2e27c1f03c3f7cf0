// sage_compat on the real kernels' outputs: fixtures/data/sage_real_ci.h5, a
// `ci` fixture with the outputs (and CUDA-event /timings) of the real
// SageAttention 2.2.0 kernels of each preset and of PyTorch's bf16 SDPA,
// captured on a GPU machine. Every one must be ACCEPTed against the gate's
// baseline (the sage2 emulation). While the file is absent the test says
// "skipped: ..." and ctest reports calibration_real_kernels as skipped.
#include <cstdio>
#include <filesystem>

#include "calibration_support.hpp"
#include "catch.hpp"
#include "fixtures/attention_inputs.hpp"
#include "fixtures/fixture.hpp"
#include "gates/metrics.hpp"
#include "reference/sage2_presets.hpp"

using namespace ts;
using namespace ts::calib;

namespace {

const char* kRealFixture = TOUCHSTONE_SOURCE_DIR "/fixtures/data/sage_real_ci.h5";

// What the capture stores (fixtures/capture/run_torch_kernel.py kernel names).
const std::vector<std::string> kExpected = {"sageattn_sm121", "sageattn_sm89", "sageattn_sm90", "sdpa_cudnn",
                                            "sdpa_flash"};

bool is_real_kernel(const std::string& name) {
  return name.rfind("sageattn_", 0) == 0 || name.rfind("sdpa_", 0) == 0;
}

}  // namespace

TEST_CASE("sage_compat ACCEPTs the real SageAttention and SDPA kernels' stored outputs", "[.real_kernels]") {
  if (!std::filesystem::exists(kRealFixture)) {
    WARN("skipped: " << kRealFixture << " is absent (captured on a GPU machine; see gates/README.md)");
    return;
  }
  const GateFile gate = load_gate("sage_compat");
  const nlohmann::json info = validate_fixture_json(kRealFixture);
  std::vector<std::string> outputs;
  for (const auto& o : info.at("outputs")) outputs.push_back(o.get<std::string>());
  for (const auto& name : kExpected) {
    INFO("expected output " << name);
    CHECK(std::find(outputs.begin(), outputs.end(), name) != outputs.end());
  }

  const Fixture fx = load_fixture(kRealFixture);
  const GateInputs in = gate_inputs(attention_problem(fx), gate.baseline, kRealFixture);
  std::printf("\nsage_compat on the real kernels of %s (baseline %s)\n", kRealFixture, gate.baseline.c_str());
  int judged = 0;
  for (const auto& name : outputs) {
    if (!is_real_kernel(name)) continue;
    const Tensor out = run_backend(in, "stored:" + name);
    const CandidateVerdict v = judge_output(gate, in, "stored:" + name, out);
    const MetricSet ve = compute_metrics(out, in.exact), vb = compute_metrics(out, in.baseline);
    std::printf("| stored:%-20s | rel_l2 vs baseline %.4g | vs exact %.4g | %s %s |\n", name.c_str(),
                vb.rel_l2.value_or(-1), ve.rel_l2.value_or(-1), verdict_name(v.verdict),
                join(failed_rules(v)).c_str());
    // The emulation of the same preset, for the record (numerics.md: 1.1e-3 to 1.8e-3).
    const std::string preset = name.substr(std::string("sageattn_").size());
    for (const auto& p : sage2_presets())
      if (name.rfind("sageattn_", 0) == 0 && preset == p.name) {
        const MetricSet emu = compute_metrics(out, run_backend(in, std::string("sage2:preset=") + p.name));
        std::printf("|   its emulation sage2:preset=%s: rel_l2 %.4g |\n", p.name, emu.rel_l2.value_or(-1));
      }
    INFO(name << ": " << verdict_name(v.verdict) << ", failed " << join(failed_rules(v)));
    for (const auto& o : v.outcomes) UNSCOPED_INFO(o.id << ": " << o.message);
    CHECK(v.verdict == Verdict::accept);
    ++judged;
  }
  CHECK(judged >= static_cast<int>(kExpected.size()));
}
