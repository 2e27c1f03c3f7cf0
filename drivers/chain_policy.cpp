#include "drivers/chain_policy.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/error.hpp"
#include "gates/gate_file.hpp"
#include "gates/metrics.hpp"
#include "gates/speed_interval.hpp"

namespace ts {
namespace {

// The chains' evidence, made before the loop runs; the loop judges it.
struct ChainCases final : EvidenceProvider {
  std::vector<Case> cases;
  std::vector<Evidence> evidence;
  size_t index(const Case& c) const { return static_cast<size_t>(&c - cases.data()); }
  void prepare(const std::vector<const Case*>&) override {}
  Evidence gather(const Case& c, CaseFigures& f) override {
    f.backend = c.candidate;
    return evidence[index(c)];
  }
};

// The chain's own flags that change its figures, where they differ from its defaults (repro lines).
std::vector<std::pair<std::string, std::string>> chain_flags(const ChainOptions& o) {
  const ChainOptions def;
  std::vector<std::pair<std::string, std::string>> f;
  if (o.exact != def.exact) f.push_back({"--exact", o.exact});
  if (o.linear != def.linear) f.push_back({"--linear", o.linear});
  if (o.recipe != def.recipe) f.push_back({"--recipe", o.recipe});
  if (o.block_backend != def.block_backend) f.push_back({"--block-backend", o.block_backend});
  return f;
}

std::string pfmt(double v, const char* f = "%.3g") {
  if (!std::isfinite(v)) return std::isnan(v) ? "NaN" : "inf";
  char buf[48];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

// Speed of a schedule against the all-baseline stack, paired by cell.
SpeedEvidence chain_speed(const ChainRun& run, const ChainResult& ch, const GateFile& gate, bool real) {
  SpeedEvidence s;
  s.level = "chain attention, per block x step cell";
  s.candidate_ms = ch.attention_ms();
  s.baseline_ms = run.baseline_attention_ms();
  if (!real) {
    s.missing = "the schedule's or the baseline's attention is an emulation, whose time is not a kernel's: the "
                "summed attention time is shown, not judged (run plugin kernels, or a gate with time_emulations)";
    return s;
  }
  if (ch.cells.size() != run.baseline.size()) {
    s.missing = "the chain did not run to its end: no summed time";
    return s;
  }
  std::vector<double> ratios;
  for (size_t i = 0; i < ch.cells.size(); ++i) {
    if (ch.cells[i].clock != run.baseline[i].clock) {
      s.missing = "cells timed on different clocks (" + ch.cells[i].clock + " and " + run.baseline[i].clock + ")";
      return s;
    }
    if (!(ch.cells[i].attention_ms > 0)) {
      s.missing = "a cell's attention time is not positive";
      return s;
    }
    ratios.push_back(run.baseline[i].attention_ms / ch.cells[i].attention_ms);
  }
  double confidence = 0.95;
  for (const auto& r : gate.rules)
    if (r.is_speed()) confidence = r.confidence;
  s.clock = ch.cells.front().clock;
  s.interval = sign_interval_paired(ratios, confidence);
  if (!s.interval) {
    s.missing = std::to_string(ratios.size()) + " cells are too few pairs for an interval at " + pfmt(confidence) +
                " confidence (" + std::to_string(min_pairs_for(confidence)) + " needed)";
    s.clock.clear();
  }
  s.note = "speed paired by cell: each block and step's attention against the baseline's at the same cell";
  return s;
}

bool dominated(const ChainResult& a, double ka, const ChainResult& b, double kb) {
  // b dominates a: no slower and no less accurate, and better in one.
  const double ea = a.last().vs_baseline.rel_l2.value_or(INFINITY), eb = b.last().vs_baseline.rel_l2.value_or(INFINITY);
  return kb <= ka && eb <= ea && (kb < ka || eb < ea);
}

}  // namespace

std::vector<std::string> policy_schedules(int steps, const std::vector<double>& taus, const std::string& backend,
                                          const std::string& precision) {
  if (taus.empty()) throw InputError("policy: --tau needs at least one value");
  std::vector<std::string> out, seen;
  for (double tau : taus) {
    if (!std::isfinite(tau)) throw InputError("policy: tau must be a finite number");
    char t[32];
    std::snprintf(t, sizeof t, "%.6g", tau);
    // The same schedule twice would be run twice and listed twice as two frontier points.
    if (std::find(seen.begin(), seen.end(), t) != seen.end())
      throw InputError(std::string("policy: --tau ") + t + " given twice");
    seen.emplace_back(t);
    std::string spec = backend + ":tau=" + t + (precision.empty() ? "" : ",precision=" + precision);
    for (int k = 0; k < steps; ++k) out.push_back(k == 0 ? spec : "dense if step<" + std::to_string(k) + "; " + spec);
  }
  out.push_back("dense");
  return out;
}

ChainJudgement judge_chains(const ChainSet& set, const std::vector<Schedule>& schedules, const ChainOptions& opts,
                            const ChainJudgeOptions& jo) {
  const GateFile gate = load_gate(jo.gate);
  for (const auto& r : gate.rules)
    if (gate.tensor_of(r) != "output")
      throw InputError(gate.source + ": rule '" + r.id + "' judges tensor '" + gate.tensor_of(r) +
                       "'; a chain gate judges the final block's output (tensor \"output\")");
  ChainJudgement J;
  J.chain = run_chains(set, schedules, opts);
  const ChainRun& run = J.chain;
  const std::string base = run.opts.baseline;
  ChainCases provider;
  CaseRequest rq;
  rq.source = CaseSource::chain;
  rq.input = set.label;
  rq.baseline = base;
  rq.gate_arg = jo.gate;
  rq.options.accuracy_only = jo.accuracy_only;
  rq.options.command = jo.command;
  rq.options.seed = jo.seed;
  rq.driver_flags = chain_flags(run.opts);
  for (const auto& ch : run.chains) rq.candidates.push_back(ch.schedule.text);
  provider.cases = make_cases(rq);
  for (size_t i = 0; i < run.chains.size(); ++i) {
    const ChainResult& ch = run.chains[i];
    Evidence ev;
    ev.candidate = ch.schedule.text;
    const bool kernel = !ch.emulated && !is_emulation_spec(base);
    const bool real = kernel || gate.time_emulations;
    J.time_is_real.push_back(real);
    J.time_is_kernel.push_back(kernel);
    if (!ch.error.empty() || ch.cells.size() != run.baseline.size()) {
      ev.error = ch.error.empty() ? "the chain stopped early" : ch.error;
    } else {
      const ChainCell& last = ch.last();
      ev.vs_baseline["output"] = metric_map(last.vs_baseline);
      ev.vs_exact["output"] = metric_map(last.vs_exact);
      ev.baseline_vs_exact["output"] = metric_map(run.baseline.back().vs_exact);
      ev.roundoff["output"] = 0.0;
      if (!jo.accuracy_only) {
        ev.speed = chain_speed(run, ch, gate, real);
        ev.details["speed"] = ev.speed->to_json();
      }
      ev.details["final_cell"] = {{"block", last.block}, {"step", last.step}};
    }
    provider.evidence.push_back(std::move(ev));
  }
  J.cases = run_cases(gate, provider.cases, &provider);
  J.cases.run.context["chain_set"] = set.label;
  J.cases.run.context["blocks"] = set.blocks;
  J.cases.run.context["steps"] = set.steps;

  // The frontier: fastest first (real time where it is judged, else the dense-equivalent work).
  auto cost = [&](size_t i) {
    const ChainResult& ch = run.chains[i];
    return J.time_is_real[i] ? ch.attention_ms() : ch.work();
  };
  std::vector<size_t> done;
  for (size_t i = 0; i < run.chains.size(); ++i)
    if (run.chains[i].error.empty() && run.chains[i].cells.size() == run.baseline.size()) done.push_back(i);
  for (size_t i : done) {
    bool dom = false;
    for (size_t j : done)
      if (j != i && dominated(run.chains[i], cost(i), run.chains[j], cost(j))) dom = true;
    if (!dom) J.frontier.push_back(i);
  }
  // Equal cost (at a small geometry every routed schedule computes every block) goes to the more
  // accurate: the chosen schedule is then always one the frontier holds.
  auto cheaper = [&](size_t a, size_t b) {
    if (cost(a) != cost(b)) return cost(a) < cost(b);
    return run.chains[a].last().vs_baseline.rel_l2.value_or(INFINITY) <
           run.chains[b].last().vs_baseline.rel_l2.value_or(INFINITY);
  };
  std::stable_sort(J.frontier.begin(), J.frontier.end(), cheaper);
  std::vector<size_t> order = done;
  std::stable_sort(order.begin(), order.end(), cheaper);
  J.ranked = order;
  for (size_t i = 0; i < run.chains.size(); ++i)
    if (std::find(done.begin(), done.end(), i) == done.end()) J.ranked.push_back(i);
  for (size_t i : order)
    if (J.cases.run.candidates[i].verdict == Verdict::accept) {
      J.chosen = i;
      break;
    }
  return J;
}

std::string ChainJudgement::time_note(size_t i) const {
  if (time_is_kernel.at(i)) return "kernel times, summed over cells";
  if (time_is_real.at(i)) return "emulation times, summed over cells: judged, as the gate's time_emulations asks";
  return "emulation time: not a speed verdict";
}

int ChainJudgement::exit_code() const {
  if (search) return chosen ? 0 : 1;
  return cases.run.exit_code();
}

}  // namespace ts
