#include "drivers/gate_on_fixture.hpp"

#include <memory>
#include <optional>

#include "core/error.hpp"
#include "core/progress.hpp"
#include "fixtures/attention_inputs.hpp"
#include "fixtures/fixture.hpp"
#include "gates/accuracy_evidence.hpp"
#include "gates/bootstrap.hpp"
#include "gates/metrics.hpp"
#include "gates/paired_timing.hpp"
#include "kernels_under_test/registry.hpp"

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

// Samples of one side and the clock they were taken on; `missing` says why
// there are none.
struct Samples {
  std::vector<double> ms;
  std::string clock, how, missing;
};

// A stored output replays its /timings (never a timed file read); a computed
// backend is timed on its own: CUDA events when it reports them, else the
// steady clock.
Samples samples_alone(AttentionBackend& b, const RotatedInputs& in, const GateRunOptions& o) {
  Samples s;
  if (b.is_stored()) {
    const auto t = b.stored_timings_ms();
    if (!t) {
      s.missing = "no timings: stored:" + b.name() + " has no /timings/" + b.name() +
                  " (reading a stored output is not timed as a kernel)";
      return s;
    }
    s.ms = *t;
    s.clock = b.stored_timings_clock();
    s.how = "stored /timings/" + b.name();
    return s;
  }
  const bool device = reports_device_time(b);
  ReportedTimer t;
  for (int w = 0; w < o.warmup; ++w) b.run(in.problems[0]);
  for (int p = 0; p < o.pairs; ++p) {
    t.start();
    run_reporting(b, in.problems[static_cast<size_t>(p) % in.problems.size()], device ? &t : nullptr);
    s.ms.push_back(t.stop_ms());
  }
  if (device && t.fallbacks())
    s.missing = "clocks differ: " + std::to_string(t.fallbacks()) + " of " + std::to_string(o.pairs) + " runs of " +
                b.name() + " reported no device time";
  s.clock = device ? kClockDevice : kClockHost;
  s.how = "timed alone";
  return s;
}

std::string too_few(size_t c, size_t b) {
  return "too few samples (candidate " + std::to_string(c) + ", baseline " + std::to_string(b) + "; at least " +
         std::to_string(kMinTimingSamples) + " a side)";
}

SpeedEvidence measure_speed(AttentionBackend& cand, AttentionBackend& base,
                                const RotatedInputs& in, double conf, const GateRunOptions& o) {
  SpeedEvidence s;
  if (cand.is_stored() || base.is_stored()) {
    // Stored samples were not taken in pairs with anything here: compare the
    // two sides' medians with an unpaired bootstrap, on one clock only.
    const Samples c = samples_alone(cand, in, o);
    if (!c.missing.empty()) {
      s.missing = "candidate: " + c.missing;
      return s;
    }
    const Samples b = samples_alone(base, in, o);
    if (!b.missing.empty()) {
      s.missing = "baseline: " + b.missing;
      return s;
    }
    if (c.clock == kClockUnknown || b.clock == kClockUnknown) {
      s.missing = "clock unknown: " + std::string(c.clock == kClockUnknown ? "the candidate's" : "the baseline's") +
                  " /timings has no clock attribute (device_events or host_steady), and an unknown clock "
                  "pairs with nothing";
      return s;
    }
    if (c.clock != b.clock) {
      s.missing = "clocks differ: candidate " + c.clock + " (" + c.how + "), baseline " + b.clock + " (" + b.how + ")";
      return s;
    }
    if (c.ms.size() < static_cast<size_t>(kMinTimingSamples) || b.ms.size() < static_cast<size_t>(kMinTimingSamples)) {
      s.missing = too_few(c.ms.size(), b.ms.size());
      return s;
    }
    s.clock = c.clock;
    s.interval = bootstrap_unpaired(b.ms, c.ms, conf, o.seed);
    s.candidate_ms = median_of(c.ms);
    s.baseline_ms = median_of(b.ms);
    s.level = "attention, " + c.how + " vs " + b.how + " (unpaired, " + std::to_string(c.ms.size()) + " and " +
              std::to_string(b.ms.size()) + " samples)";
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
            std::to_string(ps.ratios().size()) + " pairs, " + std::to_string(n) + " rotated input copies)";
  if (device && timer.fallbacks()) {
    s.missing = "clocks differ: " + std::to_string(timer.fallbacks()) +
                " run(s) reported no device time and were timed by the steady clock";
    return s;
  }
  if (ps.ratios().size() < static_cast<size_t>(kMinTimingSamples)) {
    s.missing = "too few samples (" + std::to_string(ps.ratios().size()) + " pairs; at least " +
                std::to_string(kMinTimingSamples) + ")";
    return s;
  }
  s.interval = bootstrap_paired(ps.ratios(), conf, o.seed);
  s.other_levels = nlohmann::json::array();
  return s;
}

}  // namespace

bool has_speed_rule(const GateFile& g) {
  for (const auto& r : g.rules)
    if (r.is_speed()) return true;
  return false;
}

SpeedMeasurer::SpeedMeasurer(const Fixture& fx, const AttentionProblem& problem, const GateFile& gate,
                             const GateRunOptions& opts)
    : in_(std::make_shared<const Inputs>(rotated_inputs(fx, problem, opts.rotate))),
      confidence_(confidence_of(gate)),
      opts_(opts) {
  validate(opts);
}

SpeedEvidence SpeedMeasurer::measure(AttentionBackend& candidate, AttentionBackend& baseline) const {
  return measure_speed(candidate, baseline, *in_, confidence_, opts_);
}

GateRun run_gate_on_fixture(const GateFile& gate, const std::string& fixture_path,
                             const std::string& baseline_spec,
                             const std::vector<std::string>& candidates, const GateRunOptions& o) {
  for (const auto& r : gate.rules)
    if (gate.tensor_of(r) != "attention")
      throw InputError(gate.source + ": rule '" + r.id + "' judges tensor '" + gate.tensor_of(r) +
                           "'; touchstone gate runs attention backends (judge block stages with "
                           "touchstone compare F --stages A B --gate G)");
  if (candidates.empty()) throw InputError("--fixture needs at least one --candidate");
  validate(o);
  require_device_for(baseline_spec);
  for (const auto& c : candidates) require_device_for(c);
  LoadOptions lo;
  lo.allow_nonfinite = o.allow_nonfinite;
  const Fixture fx = load_fixture(fixture_path, lo);
  const AttentionProblem problem = attention_problem(fx);
  const BackendContext ctx{fixture_path};

  // Every spec is parsed before anything runs: a typo is bad input (exit 2),
  // not a rejected candidate.
  const ExactChoice exact_choice = choose_exact(o.exact, fixture_path, fx.config);
  auto exact = make_attention_backend(exact_choice.spec, ctx);
  auto base = make_attention_backend(baseline_spec, ctx);
  std::vector<std::unique_ptr<AttentionBackend>> cands;
  for (const auto& c : candidates) cands.push_back(make_attention_backend(c, ctx));
  {
    const int timed = has_speed_rule(gate) ? o.warmup + o.pairs : 0;
    std::vector<std::pair<std::string, int>> runs = {{exact_choice.spec, 1},
                                                     {baseline_spec, 1 + timed * static_cast<int>(candidates.size())}};
    for (const auto& c : candidates) runs.push_back({c, 1 + timed});
    refuse_slow_cpu(runs, fx.config, SlowGuard::from_env(o.allow_slow), "gate");
  }

  const Tensor exact_out = exact->run(problem).out;
  const Tensor base_out = run_baseline(*base, problem, baseline_spec);
  const MetricSet base_exact = compute_metrics(base_out, exact_out);
  const Figures base_exact_figures = accuracy_figures(base_out, exact_out, &fx.config);

  GateRun run;
  run.gate = gate;
  run.mode = "fixture";
  run.input = fixture_path;
  run.baseline = baseline_spec;
  run.context = {{"fixture", fixture_path},
                 {"shape", exact_out.shape_string()},
                 {"baseline_backend", base->name()},
                 {"exact", {{"spec", exact_choice.spec}, {"why", exact_choice.why}}},
                 {"baseline_vs_exact", base_exact.to_json()},
                 {"pairs", o.pairs},
                 {"warmup", o.warmup},
                 {"seed", o.seed}};
  const std::string gate_arg = !o.gate_arg.empty() ? o.gate_arg
                               : gate.source.rfind("builtin:", 0) == 0 ? gate.source.substr(8) : gate.source;
  std::optional<SpeedMeasurer> speed;
  if (has_speed_rule(gate)) speed.emplace(fx, problem, gate, o);
  Progress progress("gate", static_cast<int64_t>(cands.size()));
  for (size_t i = 0; i < cands.size(); ++i) {
    const std::string& spec = candidates[i];
    Evidence ev;
    ev.candidate = spec;
    try {
      AttentionResult res = cands[i]->run(problem);
      add_accuracy_evidence(ev, "attention", res.out, base_out, exact_out, base_exact_figures, &fx.config);
      ev.details["backend"] = cands[i]->name();
      ev.details["params"] = cands[i]->params();
      if (!res.stats.empty()) ev.details["stats"] = res.stats;
      if (has_speed_rule(gate)) {
        ev.speed = speed->measure(*cands[i], *base);
        ev.details["speed"] = ev.speed->to_json();
      }
    } catch (const std::exception& e) {
      ev.error = e.what();
    }
    const std::string repro = "touchstone gate --gate " + shell_quote(gate_arg) + " --fixture " + shell_quote(fixture_path) +
                              " --baseline " + shell_quote(baseline_spec) + " --candidate " + shell_quote(spec);
    run.candidates.push_back(judge(gate, ev, repro));
    progress.advance();
  }
  return run;
}

void validate(const GateRunOptions& o) {
  if (o.pairs < 1) throw InputError("--pairs must be at least 1, got " + std::to_string(o.pairs));
  if (o.warmup < 0) throw InputError("--warmup must not be negative, got " + std::to_string(o.warmup));
  if (o.rotate < 1) throw InputError("--rotate must be at least 1, got " + std::to_string(o.rotate));
  if (!(o.budget_s >= 0)) throw InputError("--budget-s must not be negative");
}

Tensor run_baseline(AttentionBackend& baseline, const AttentionProblem& problem, const std::string& spec) {
  try {
    return baseline.run(problem).out;
  } catch (const InputError&) {
    throw;
  } catch (const std::exception& e) {
    throw InputError("baseline '" + spec + "' failed: " + e.what());
  }
}

std::string shell_quote(const std::string& s) {
  if (s.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.,:=/+@%") ==
      std::string::npos && !s.empty())
    return s;
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

}  // namespace ts
