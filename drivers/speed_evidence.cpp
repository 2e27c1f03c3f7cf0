#include "drivers/speed_evidence.hpp"

#include <cstring>
#include <map>
#include <memory>

#include "gates/bootstrap.hpp"
#include "gates/paired_timing.hpp"
#include "gates/speed_interval.hpp"

namespace ts {
namespace {

// Inputs beyond this are far larger than any cache, so rotating copies of
// them buys nothing and would only cost memory.
constexpr int64_t kRotateLimitBytes = 256ll << 20;

}  // namespace

// Copies of the fixture's q, k, v that timed runs cycle through, so that
// neither side is timed on inputs the other just pulled into cache.
struct SpeedMeasurer::Inputs {
  std::vector<Tensor> store;  // q, k, v per copy
  std::vector<StoredTensor> stored;  // q, k, v per copy of a problem of stored inputs (reserved: never moves)
  std::vector<AttentionProblem> problems;
};

namespace {

using RotatedInputs = SpeedMeasurer::Inputs;

RotatedInputs rotated_inputs(const Fixture& fx, const AttentionProblem& base, int rotate) {
  RotatedInputs r;
  const int64_t bytes = 8 * (fx.q.numel() + fx.k.numel() + fx.v.numel());
  if (rotate <= 1 || bytes * rotate > kRotateLimitBytes) {
    r.problems.push_back(base);
    return r;
  }
  if (base.stored_only()) {
    // Copies of the stored bytes (each its own memory, as the float64 copies are).
    auto copy = [](const StoredTensor& t) {
      const size_t esize = t.dtype == DType::bf16 || t.dtype == DType::f16 ? 2 : static_cast<size_t>(dtype_bytes(t.dtype));
      auto bytes = std::make_shared<std::vector<unsigned char>>(static_cast<size_t>(t.numel()) * esize);
      for (const auto& sp : t.spans)
        std::memcpy(bytes->data() + static_cast<size_t>(sp.first) * esize, sp.bytes, static_cast<size_t>(sp.count) * esize);
      StoredTensor c;
      c.shape = t.shape;
      c.dtype = t.dtype;
      c.spans = {{0, t.numel(), bytes->data()}};
      c.owner = bytes;
      return c;
    };
    r.stored.reserve(static_cast<size_t>(3 * rotate));
    for (int i = 0; i < rotate; ++i) {
      for (const StoredTensor* t : {base.q_stored, base.k_stored, base.v_stored}) r.stored.push_back(copy(*t));
      AttentionProblem p = base;
      p.q_stored = &r.stored[r.stored.size() - 3];
      p.k_stored = &r.stored[r.stored.size() - 2];
      p.v_stored = &r.stored[r.stored.size() - 1];
      r.problems.push_back(p);
    }
    return r;
  }
  r.store.reserve(static_cast<size_t>(3 * rotate));
  for (int i = 0; i < rotate; ++i) {
    r.store.push_back(fx.q);
    r.store.push_back(fx.k);
    r.store.push_back(fx.v);
    AttentionProblem p = base;
    p.q = BSHDView::of(r.store[r.store.size() - 3]);
    p.k = BSHDView::of(r.store[r.store.size() - 2]);
    p.v = BSHDView::of(r.store[r.store.size() - 1]);
    r.problems.push_back(p);
  }
  return r;
}

double confidence_of(const GateFile& g) {
  for (const auto& r : g.rules)
    if (r.is_speed()) return r.confidence;
  return 0.95;
}

// A device backend reports its kernels' CUDA-event time (stats "device_ms"):
// two of them are compared on that, anything else on the steady clock.
bool reports_device_time(const AttentionBackend& b) { return b.device() == "cuda"; }

void run_reporting(AttentionBackend& b, const AttentionProblem& p, ReportedTimer* t) {
  const AttentionResult r = b.run(p);
  if (t && r.stats.contains("device_ms") && r.stats["device_ms"].is_number())
    t->report(r.stats["device_ms"].get<double>());
}

// Why paired samples give no interval: too few rounds for the sign test at this confidence.
std::string too_few_pairs(size_t n, double conf) {
  return "too few pairs (" + std::to_string(n) + "; the sign-test interval at " + format_number(conf * 100) +
         " % needs at least " + std::to_string(min_pairs_for(conf)) + ")";
}

std::string count_text(size_t n, const char* what) { return std::to_string(n) + " " + what + (n == 1 ? "" : "s"); }

// Both sides stored: their samples, on one clock.
SpeedEvidence measure_stored(AttentionBackend& cand, AttentionBackend& base, double conf) {
  SpeedEvidence s;
  for (AttentionBackend* b : {&cand, &base}) {
    if (!b->stored_timings_ms()) {
      s.missing = std::string(b == &cand ? "candidate" : "baseline") + ": no timings: stored:" + b->name() +
                  " has no /timings/" + b->name() + " (reading a stored output is not timed as a kernel)";
      return s;
    }
  }
  const std::string cc = cand.stored_timings_clock(), bc = base.stored_timings_clock();
  if (cc == kClockUnknown || bc == kClockUnknown) {
    s.missing = "clock unknown: " + std::string(cc == kClockUnknown ? "the candidate's" : "the baseline's") +
                " /timings has no clock attribute (device_events or host_steady), and an unknown clock "
                "pairs with nothing";
    return s;
  }
  if (cc != bc) {
    s.missing = "clocks differ: candidate " + cc + " (stored /timings/" + cand.name() + "), baseline " + bc +
                " (stored /timings/" + base.name() + ")";
    return s;
  }
  s = stored_speed(*cand.stored_timings_ms(), cand.stored_timing_runs(), *base.stored_timings_ms(),
                   base.stored_timing_runs(), conf);
  if (s.missing.empty()) s.clock = cc;
  return s;
}

SpeedEvidence measure_speed(AttentionBackend& cand, AttentionBackend& base, const RotatedInputs& in, double conf,
                            const TimingOptions& o) {
  SpeedEvidence s;
  if (cand.is_stored() && base.is_stored()) return measure_stored(cand, base, conf);
  if (cand.is_stored() || base.is_stored()) {
    // One side's samples were taken in another process, at another time: the
    // run-to-run variance between them and a run here is unknown.
    const AttentionBackend& stored = cand.is_stored() ? cand : base;
    s.missing = std::string("different timing runs: the ") + (cand.is_stored() ? "candidate" : "baseline") +
                "'s samples are stored (/timings/" + stored.name() + ") and the " +
                (cand.is_stored() ? "baseline" : "candidate") +
                " would be timed here; store both, timed in one run (python3 -m touchstone replay F --kernel A "
                "--kernel B)";
    return s;
  }
  // Both on the device: their own CUDA-event times. Otherwise the whole call
  // on the steady clock (a CPU emulation has no other time to give).
  const bool device = reports_device_time(cand) && reports_device_time(base);
  ReportedTimer timer;
  PairedTimingOptions po;
  po.pairs = o.pairs;
  po.warmup = o.warmup;
  po.budget_s = o.budget_s;
  const size_t n = in.problems.size();
  ReportedTimer* report = device ? &timer : nullptr;
  const PairedSamples ps = time_paired(
      [&](int64_t p) { run_reporting(cand, in.problems[static_cast<size_t>(p + 1024) % n], report); },
      [&](int64_t p) { run_reporting(base, in.problems[static_cast<size_t>(p + 1024) % n], report); }, timer, po);
  s.candidate_ms = median_of(ps.candidate_ms);
  s.baseline_ms = median_of(ps.baseline_ms);
  s.clock = device ? kClockDevice : kClockHost;
  s.level = std::string("attention, paired ") +
            (device ? "device time (CUDA events the backends report)" : "CPU steady clock") + " (" +
            std::to_string(ps.ratios().size()) + " pairs in one timing run, " + std::to_string(n) +
            " rotated input copies)";
  if (device && timer.fallbacks()) {
    s.missing = "clocks differ: " + std::to_string(timer.fallbacks()) +
                " run(s) reported no device time and were timed by the steady clock";
    return s;
  }
  s.interval = sign_interval_paired(ps.ratios(), conf);
  if (!s.interval) s.missing = too_few_pairs(ps.ratios().size(), conf);
  return s;
}

}  // namespace

SpeedEvidence stored_speed(const std::vector<double>& cand_ms, const std::vector<std::string>& cand_runs,
                           const std::vector<double>& base_ms, const std::vector<std::string>& base_runs,
                           double confidence) {
  SpeedEvidence s;
  if (cand_ms.size() < static_cast<size_t>(kMinTimingSamples) || base_ms.size() < static_cast<size_t>(kMinTimingSamples)) {
    s.missing = "too few samples (candidate " + std::to_string(cand_ms.size()) + ", baseline " +
                std::to_string(base_ms.size()) + "; at least " + std::to_string(kMinTimingSamples) + " a side)";
    return s;
  }
  s.candidate_ms = median_of(cand_ms);
  s.baseline_ms = median_of(base_ms);
  // Runs in order of first appearance, with their samples.
  auto by_run = [](const std::vector<double>& ms, const std::vector<std::string>& runs) {
    std::vector<std::pair<std::string, std::vector<double>>> out;
    for (size_t i = 0; i < ms.size(); ++i) {
      const std::string id = runs.empty() ? std::string() : runs[i];
      auto it = std::find_if(out.begin(), out.end(), [&](const auto& p) { return p.first == id; });
      if (it == out.end()) out.push_back({id, {ms[i]}});
      else it->second.push_back(ms[i]);
    }
    return out;
  };
  const auto cr = by_run(cand_ms, cand_runs), br = by_run(base_ms, base_runs);
  const bool known = !cand_runs.empty() && !base_runs.empty();
  // One shared timing run, sampled in rounds: pair sample i with sample i.
  if (known && cr.size() == 1 && br.size() == 1 && cr[0].first == br[0].first) {
    if (cand_ms.size() != base_ms.size()) {
      s.missing = "timing run " + cr[0].first + " holds " + std::to_string(cand_ms.size()) + " candidate and " +
                  std::to_string(base_ms.size()) + " baseline samples: rounds cannot be paired";
      return s;
    }
    std::vector<double> ratios;
    for (size_t i = 0; i < cand_ms.size(); ++i) ratios.push_back(base_ms[i] / cand_ms[i]);
    s.interval = sign_interval_paired(ratios, confidence);
    if (!s.interval) s.missing = too_few_pairs(ratios.size(), confidence);
    s.level = "attention, stored samples interleaved in one timing run (" + cr[0].first + ", " +
              count_text(ratios.size(), "round") + "), paired by round";
    return s;
  }
  // Several runs a side: the run medians carry the run-to-run variance.
  if (known && cr.size() >= static_cast<size_t>(kMinTimingRuns) && br.size() >= static_cast<size_t>(kMinTimingRuns)) {
    std::vector<double> cm, bm;
    for (const auto& [id, ms] : cr) cm.push_back(median_of(ms));
    for (const auto& [id, ms] : br) bm.push_back(median_of(ms));
    s.interval = welch_interval_runs(bm, cm, confidence);
    s.candidate_ms = median_of(cm);
    s.baseline_ms = median_of(bm);
    s.level = "attention, medians of " + count_text(cr.size(), "timing run") + " (candidate) and " +
              count_text(br.size(), "timing run") + " (baseline), unpaired: run-to-run variance included";
    return s;
  }
  auto runs_text = [&](const auto& r, const std::vector<std::string>& ids) {
    if (ids.empty()) return std::string("unknown timing run");
    return r.size() == 1 ? "timing run " + r[0].first : count_text(r.size(), "timing run");
  };
  s.missing = "different timing runs (candidate: " + runs_text(cr, cand_runs) + ", baseline: " +
              runs_text(br, base_runs) + "): the run-to-run variance is unknown; time both in one run (python3 -m "
              "touchstone replay F --kernel A --kernel B) or store at least " + std::to_string(kMinTimingRuns) +
              " timing runs a side";
  return s;
}

SpeedMeasurer::SpeedMeasurer(const Fixture& fx, const AttentionProblem& problem, const GateFile& gate,
                             const TimingOptions& opts)
    : in_(std::make_shared<const Inputs>(rotated_inputs(fx, problem, opts.rotate))),
      confidence_(confidence_of(gate)),
      opts_(opts) {}

SpeedEvidence SpeedMeasurer::measure(AttentionBackend& candidate, AttentionBackend& baseline) const {
  return measure_speed(candidate, baseline, *in_, confidence_, opts_);
}

}  // namespace ts
