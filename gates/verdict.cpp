#include "gates/verdict.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "core/block_stage_table.hpp"
#include "core/error.hpp"
#include "gates/metrics.hpp"
#include "gates/storage_check.hpp"

namespace ts {
namespace {


std::string against_text(const GateRule& r) { return r.against == "exact" ? "exact" : "baseline"; }

const Figures* figures_for(const std::map<std::string, Figures>& m, const std::string& tensor) {
  auto it = m.find(tensor);
  return it == m.end() ? nullptr : &it->second;
}

// A figure that is absent (not measured) or present but undefined.
struct Lookup {
  bool present = false;
  std::optional<double> value;
};
Lookup lookup(const Figures* f, const std::string& metric) {
  if (!f) return {};
  auto it = f->find(metric);
  if (it == f->end()) return {};
  return {true, it->second};
}

RuleOutcome base_outcome(const GateRule& r, const std::string& tensor) {
  RuleOutcome o;
  o.id = r.id;
  o.metric = r.metric;
  o.against = r.against;
  o.tensor = tensor;
  o.bound = r.bound_text();
  o.optional = r.optional;
  return o;
}

RuleOutcome judge_accuracy(const GateRule& r, const std::string& tensor, const Evidence& ev) {
  RuleOutcome o = base_outcome(r, tensor);
  const Figures* figs = figures_for(r.against == "exact" ? ev.vs_exact : ev.vs_baseline, tensor);
  const std::string what = r.metric + " vs " + against_text(r) + " (" + tensor + ")";
  const Lookup v = lookup(figs, r.metric);
  if (v.present) o.figure = v.value;

  // NaN never passes: non-finite values in the candidate (or in what it is
  // compared against) fail every accuracy rule, whatever the figure says.
  const Lookup nf = lookup(figs, "nonfinite");
  if (nf.present && nf.value && *nf.value > 0) {
    o.status = RuleStatus::fail;
    o.message = what + ": candidate has " + format_number(*nf.value) + " non-finite values (NaN never passes)";
    return o;
  }
  const Lookup nfr = lookup(figs, "nonfinite_ref");
  if (nfr.present && nfr.value && *nfr.value > 0) {
    o.status = RuleStatus::fail;
    o.message = what + ": the " + against_text(r) + " has " + format_number(*nfr.value) +
                " non-finite values, so the comparison cannot pass";
    return o;
  }
  if (!v.present) {
    o.status = RuleStatus::missing;
    o.message = "missing measurement: " + what;
    return o;
  }
  if (!v.value) {
    o.status = RuleStatus::missing;
    o.message = "undefined measurement: " + what + " (the reference is all zeros; not divided)";
    return o;
  }
  const double x = *v.value;
  if (std::isnan(x)) {
    o.status = RuleStatus::fail;
    o.message = what + " is NaN (NaN never passes)";
    return o;
  }
  std::vector<std::string> failed;
  if (r.min && !(x >= *r.min)) failed.push_back(format_number(x) + " < min " + format_number(*r.min));
  if (r.max && !(x <= *r.max)) failed.push_back(format_number(x) + " > max " + format_number(*r.max));
  if (r.max_ratio_to_baseline) {
    const Lookup b = lookup(figures_for(ev.baseline_vs_exact, tensor), r.metric);
    // A baseline without error of its own (the exact reference itself) makes the limit 0:
    // a bound no kernel but exact meets, which judges nothing (gates/README.md "Verdicts").
    const bool no_error = b.present && b.value && *b.value == 0;
    if (!b.present || !b.value || std::isnan(*b.value) || no_error) {
      if (failed.empty()) {
        o.status = RuleStatus::missing;
        o.message = no_error ? "baseline " + r.metric + " vs exact (" + tensor +
                                   ") is 0: max_ratio_to_baseline bounds nothing against a baseline without "
                                   "error of its own (use one with its own error, e.g. sage2)"
                             : std::string(b.present ? "undefined" : "missing") + " measurement: baseline " +
                                   r.metric + " vs exact (" + tensor + "), needed for max_ratio_to_baseline";
        return o;
      }
    } else {
      const double limit = *r.max_ratio_to_baseline * *b.value;
      o.limit = limit;
      o.bound = r.bound_text() + " (baseline " + format_number(*b.value) + ", limit " + format_number(limit) + ")";
      if (!(x <= limit))
        failed.push_back(format_number(x) + " > " + format_number(*r.max_ratio_to_baseline) + " x baseline's " +
                         format_number(*b.value) + " = " + format_number(limit));
    }
  }
  if (r.growth) {
    const BlockStageInfo* st = find_block_stage(tensor);
    const GrowthBound& g = *r.growth;
    const double floor = g.from_table ? (st ? st->floor : 0.0) : g.floor;
    const double factor = g.from_table ? (st ? st->growth : 0.0) : g.factor;
    double in = 0.0;
    std::string from;
    if (st)
      for (BlockStage s : st->inputs) {
        const Lookup f = lookup(figures_for(r.against == "exact" ? ev.vs_exact : ev.vs_baseline, stage_name(s)), r.metric);
        if (!f.present) continue;
        // An undefined input figure explains any error downstream.
        const double v = f.value && !std::isnan(*f.value) ? *f.value : HUGE_VAL;
        if (v > in || from.empty()) {
          in = std::max(in, v);
          from = stage_name(s);
        }
      }
    double round = 0.0;
    if (g.rounding) {
      auto it = ev.roundoff.find(tensor);
      if (it != ev.roundoff.end()) round = it->second;
    }
    const double limit = floor + factor * in + round;
    o.limit = limit;
    o.bound = "<= " + format_number(floor) + " + " + format_number(factor) + " x " + format_number(in) +
              (from.empty() ? " (no input stage compared)" : " (" + from + ")") +
              (round > 0 ? " + rounding " + format_number(round) : "") + " = " + format_number(limit);
    if (!(x <= limit)) failed.push_back(format_number(x) + " > growth bound " + format_number(limit));
  }
  {
    const auto& worst = r.against == "exact" ? ev.worst_vs_exact : ev.worst_vs_baseline;
    auto t = worst.find(tensor);
    if (t != worst.end()) {
      auto g = t->second.find(r.metric);
      if (g != t->second.end()) o.worst = g->second;
    }
  }
  if (failed.empty()) {
    o.status = RuleStatus::pass;
    o.message = what + " = " + format_number(x) + " within " + o.bound;
  } else {
    o.status = RuleStatus::fail;
    std::string s;
    for (size_t i = 0; i < failed.size(); ++i) s += (i ? "; " : "") + failed[i];
    o.message = what + " = " + s;
    if (o.worst) o.message += ": " + o.worst->text(r.metric.rfind("gain", 0) == 0);
  }
  return o;
}

RuleOutcome judge_speed(const GateRule& r, const std::string& tensor, const Evidence& ev) {
  RuleOutcome o = base_outcome(r, tensor);
  if (r.is_speed()) {
    std::ostringstream b;
    if (r.min) b << ">= " << format_number(*r.min);
    if (r.min && r.max) b << " and ";
    if (r.max) b << "<= " << format_number(*r.max);
    o.bound = b.str();
  }
  if (ev.speed && !ev.speed->missing.empty()) {
    o.status = RuleStatus::missing;
    o.message = "speedup vs baseline (" + tensor + ") not judged: " + ev.speed->missing;
    return o;
  }
  if (!ev.speed || (!ev.speed->interval && !(ev.speed->candidate_ms && ev.speed->baseline_ms))) {
    o.status = RuleStatus::missing;
    o.message = "missing measurement: speedup vs baseline (" + tensor + "): no timing";
    return o;
  }
  const SpeedEvidence& s = *ev.speed;
  std::string times;
  if (s.candidate_ms && s.baseline_ms)
    times = format_number(*s.candidate_ms) + " ms vs baseline " + format_number(*s.baseline_ms) + " ms";
  if (!s.level.empty()) times += (times.empty() ? "" : ", ") + s.level;
  if (!s.clock.empty()) times += (times.empty() ? "" : ", ") + std::string("clock ") + s.clock;

  if (s.interval) {
    const Interval& iv = *s.interval;
    o.interval = iv;
    o.figure = iv.point;
    const bool any_nan = std::isnan(iv.lower) || std::isnan(iv.upper) || std::isnan(iv.point);
    const std::string ci = "speedup " + format_number(iv.point) + " [" + format_number(iv.confidence * 100) + "% CI " +
                           format_number(iv.lower) + ", " + format_number(iv.upper) + "]";
    bool fail = any_nan, straddle = false;
    if (r.min) {
      if (iv.upper < *r.min) fail = true;
      else if (!(iv.lower >= *r.min)) straddle = true;
    }
    if (r.max) {
      if (iv.lower > *r.max) fail = true;
      else if (!(iv.upper <= *r.max)) straddle = true;
    }
    o.status = fail ? RuleStatus::fail : straddle ? RuleStatus::inconclusive : RuleStatus::pass;
    o.message = ci + " vs " + o.bound + " (" + times + ")" +
                (o.status == RuleStatus::inconclusive ? ": the interval straddles the bound; more pairs would decide" : "");
    return o;
  }
  const double x = *s.baseline_ms / *s.candidate_ms;
  o.figure = x;
  bool fail = !std::isfinite(x), at_bound = false;
  if (r.min) {
    if (x < *r.min) fail = true;
    if (x == *r.min) at_bound = true;
  }
  if (r.max) {
    if (x > *r.max) fail = true;
    if (x == *r.max) at_bound = true;
  }
  // A single figure carries no spread: at the bound exactly, it cannot show
  // that the candidate is faster, so it neither passes nor fails.
  o.status = fail ? RuleStatus::fail : at_bound ? RuleStatus::inconclusive : RuleStatus::pass;
  o.message = "speedup " + format_number(x) + " vs " + o.bound + " (" + times + "; judged on single figures, no samples)" +
              (o.status == RuleStatus::inconclusive ? ": a single figure at the bound cannot decide" : "");
  return o;
}

void builtin_checks(const GateFile& gate, const Evidence& ev, std::vector<RuleOutcome>& out) {
  std::vector<std::string> tensors{gate.tensor};
  for (const auto& r : gate.rules)
    if (!r.tensor.empty() && std::find(tensors.begin(), tensors.end(), r.tensor) == tensors.end())
      tensors.push_back(r.tensor);
  for (const auto& tensor : tensors) {
    for (const char* against : {"baseline", "exact"}) {
      const Figures* f = figures_for(std::string(against) == "baseline" ? ev.vs_baseline : ev.vs_exact, tensor);
      if (!f) continue;
      const Lookup zf = lookup(f, "zero_fraction"), zr = lookup(f, "zero_fraction_ref");
      if (zf.value && zr.value) {
        RuleOutcome o;
        o.id = "zero_guard";
        o.metric = "zero_fraction";
        o.against = against;
        o.tensor = tensor;
        o.builtin = true;
        o.figure = *zf.value - *zr.value;
        o.bound = "excess zeros <= " + format_number(kZeroGuardExcess);
        const bool bad = !(*o.figure <= kZeroGuardExcess);
        o.status = bad ? RuleStatus::fail : RuleStatus::pass;
        o.message = "zero_fraction " + format_number(*zf.value) + " vs " + against + "'s " + format_number(*zr.value) +
                    (bad ? ": the candidate is mostly zeros where the reference is not" : "");
        out.push_back(o);
      }
      const Lookup nf = lookup(f, "nonfinite");
      if (nf.value) {
        RuleOutcome o;
        o.id = "finite_guard";
        o.metric = "nonfinite";
        o.against = against;
        o.tensor = tensor;
        o.builtin = true;
        o.figure = *nf.value;
        o.bound = "== 0";
        o.status = *nf.value == 0 ? RuleStatus::pass : RuleStatus::fail;
        o.message = format_number(*nf.value) + " non-finite values in the candidate" +
                    (*nf.value == 0 ? "" : " (NaN never passes)");
        out.push_back(o);
      }
      break;  // one comparison suffices: both describe the same candidate tensor
    }
  }
}

}  // namespace

const std::vector<VerdictWords>& verdict_table() {
  static const std::vector<VerdictWords> t = {
      {Verdict::accept, "ACCEPT", "accept", "accepted", true},
      {Verdict::reject, "REJECT", "reject", "rejected", true},
      {Verdict::inconclusive, "INCONCLUSIVE", "inconclusive", "inconclusive", true},
      {Verdict::mistrusted, "MISTRUSTED", "mistrusted", "mistrusted", false},
  };
  return t;
}

const char* verdict_name(Verdict v) {
  for (const auto& w : verdict_table())
    if (w.verdict == v) return w.name;
  return "?";
}

Verdict verdict_from_name(const std::string& name, const std::string& where) {
  std::string known;
  for (const auto& w : verdict_table()) {
    if (name == w.name) return w.verdict;
    known += (known.empty() ? "" : ", ") + std::string(w.name);
  }
  throw InputError(where + ": unknown verdict '" + name + "' (verdicts: " + known + ")");
}

void VerdictCounts::add(Verdict v) {
  ++total;
  for (auto& [w, n] : counts)
    if (w->verdict == v) {
      ++n;
      return;
    }
  for (const auto& w : verdict_table())
    if (w.verdict == v) counts.emplace_back(&w, 1);
  // Keep the table's order whatever order the verdicts came in.
  std::sort(counts.begin(), counts.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
}

int VerdictCounts::of(Verdict v) const {
  for (const auto& [w, n] : counts)
    if (w->verdict == v) return n;
  return 0;
}

nlohmann::json VerdictCounts::to_json() const {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [w, n] : counts) j[w->key] = n;
  return j;
}

std::string VerdictCounts::text(bool names) const {
  std::string s;
  for (const auto& [w, n] : counts)
    s += (s.empty() ? "" : ", ") + std::to_string(n) + " " + (names ? w->name : w->counted);
  return s;
}

VerdictCounts count_verdicts(const std::vector<CandidateVerdict>& candidates) {
  VerdictCounts c;
  for (const auto& w : verdict_table())
    if (w.always_counted) c.counts.emplace_back(&w, 0);
  for (const auto& v : candidates) c.add(v.verdict);
  return c;
}

const char* rule_status_name(RuleStatus s) {
  switch (s) {
    case RuleStatus::pass: return "pass";
    case RuleStatus::fail: return "fail";
    case RuleStatus::missing: return "missing";
    case RuleStatus::inconclusive: return "inconclusive";
  }
  return "?";
}

CandidateVerdict judge(const GateFile& gate, const Evidence& ev, const std::string& repro, JudgeKey) {
  check_bit_exact_storage(gate, ev);
  CandidateVerdict v;
  v.candidate = ev.candidate;
  v.notes = ev.notes;
  v.details = ev.details;
  v.error = ev.error;
  if (!ev.error.empty()) {
    RuleOutcome run;
    run.id = "run";
    run.builtin = true;
    run.status = RuleStatus::fail;
    run.bound = "runs without error";
    run.message = "candidate failed: " + ev.error;
    v.outcomes.push_back(run);
    for (const auto& r : gate.rules) {
      RuleOutcome o = base_outcome(r, gate.tensor_of(r));
      o.status = RuleStatus::missing;
      o.message = "not measured: the candidate failed to run";
      v.outcomes.push_back(o);
    }
  } else {
    for (const auto& r : gate.rules) {
      const std::string& tensor = gate.tensor_of(r);
      v.outcomes.push_back(r.is_speed() ? judge_speed(r, tensor, ev) : judge_accuracy(r, tensor, ev));
    }
    builtin_checks(gate, ev, v.outcomes);
    if (ev.speed && ev.speed->single_figure &&
        std::any_of(gate.rules.begin(), gate.rules.end(), [](const GateRule& r) { return r.is_speed(); }))
      v.notes.push_back("speed judged on single figures (no samples, no confidence interval)");
    if (ev.speed && !ev.speed->note.empty()) v.notes.push_back(ev.speed->note);
    for (const auto& o : v.outcomes)
      if (o.metric == "speedup" && (o.status == RuleStatus::pass || o.status == RuleStatus::fail ||
                                    o.status == RuleStatus::inconclusive) && ev.speed)
        v.clock = ev.speed->clock;
    if (!v.clock.empty()) v.notes.push_back(std::string("speed decided on the ") + v.clock + " clock");
  }
  bool any_fail = false, any_open = false;
  for (const auto& o : v.outcomes) {
    if (o.status == RuleStatus::fail) any_fail = true;
    if (o.status == RuleStatus::inconclusive) any_open = true;
    if (o.status == RuleStatus::missing && !o.optional) any_open = true;
  }
  v.verdict = any_fail ? Verdict::reject : any_open ? Verdict::inconclusive : Verdict::accept;
  if (!ev.mistrusted.empty()) {
    v.verdict = Verdict::mistrusted;
    for (const auto& why : ev.mistrusted) v.notes.push_back("MISTRUSTED: " + why);
  }
  if (v.verdict != Verdict::accept) v.repro = repro;
  return v;
}

int GateRun::exit_code() const {
  if (candidates.empty()) return kGateFailed;
  for (const auto& c : candidates)
    if (c.verdict != Verdict::accept) return kGateFailed;
  return kPass;
}

nlohmann::json SpeedEvidence::to_json() const {
  nlohmann::json j;
  j["interval"] = interval ? interval->to_json() : nlohmann::json();
  j["candidate_ms"] = candidate_ms ? nlohmann::json(*candidate_ms) : nlohmann::json();
  j["baseline_ms"] = baseline_ms ? nlohmann::json(*baseline_ms) : nlohmann::json();
  j["single_figure"] = single_figure;
  j["clock"] = clock;
  if (!missing.empty()) j["missing"] = missing;
  j["level"] = level;
  if (!note.empty()) j["note"] = note;
  j["other_levels"] = other_levels;
  return j;
}

nlohmann::json RuleOutcome::to_json() const {
  nlohmann::json j{{"id", id},
                   {"metric", metric},
                   {"against", against},
                   {"tensor", tensor},
                   {"status", rule_status_name(status)},
                   {"bound", bound},
                   {"message", message},
                   {"builtin", builtin},
                   {"optional", optional}};
  j["figure"] = figure_json(figure);
  if (interval) j["interval"] = interval->to_json();
  if (worst) j["worst"] = worst->to_json();
  return j;
}

nlohmann::json CandidateVerdict::to_json() const {
  nlohmann::json j{{"candidate", candidate}, {"verdict", verdict_name(verdict)}};
  j["rules"] = nlohmann::json::array();
  for (const auto& o : outcomes) j["rules"].push_back(o.to_json());
  j["notes"] = notes;
  if (!error.empty()) j["error"] = error;
  if (!repro.empty()) j["repro"] = repro;
  j["clock"] = clock.empty() ? nlohmann::json(nullptr) : nlohmann::json(clock);
  if (!shown.empty()) j["shown"] = shown;
  j["details"] = details;
  return j;
}

nlohmann::json GateRun::to_json() const {
  nlohmann::json j;
  j["schema"] = "touchstone.gate-report/1";
  j["gate"] = gate.to_json();
  j["mode"] = mode;
  j["input"] = input;
  j["baseline"] = baseline;
  j["context"] = context;
  if (!columns.empty()) j["columns"] = columns;
  j["candidates"] = nlohmann::json::array();
  for (const auto& c : candidates) j["candidates"].push_back(c.to_json());
  j["summary"] = count_verdicts(candidates).to_json();
  j["summary"]["exit_code"] = exit_code();
  return j;
}

}  // namespace ts
