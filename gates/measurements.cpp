#include "gates/measurements.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <sstream>

#include "core/block_stage_table.hpp"
#include "core/error.hpp"
#include "gates/json_input.hpp"
#include "gates/metric_range.hpp"
#include "gates/metrics.hpp"

namespace ts {
namespace {

bool is_metric_name(const std::string& q) {
  const auto& n = gate_metric_names();
  return std::find(n.begin(), n.end(), q) != n.end() || q == "nonfinite_ref" ||
         q == "zero_fraction_ref";
}

double to_ms(double v, const std::string& unit) { return unit == "s" ? v * 1000.0 : v; }

// Stage name of block.md -> the component name the seed's block profile uses.
std::string block_component(const std::string& stage) {
  if (stage == "stages") return "module_forward";
  const BlockStageInfo* s = find_block_stage(stage);
  return s ? s->profile_component : stage;
}

}  // namespace

bool Measurement::is_metric() const { return is_metric_name(quantity); }

nlohmann::json Measurement::to_json() const {
  nlohmann::json j{{"backend", backend}, {"quantity", quantity}, {"value", value},
                   {"unit", unit},       {"level", level},       {"provenance", provenance}};
  if (!against.empty()) j["against"] = against;
  if (is_metric()) j["tensor"] = tensor;
  if (!statistic.empty()) j["statistic"] = statistic;
  if (!raw_backend.empty() && raw_backend != backend) j["raw_backend"] = raw_backend;
  if (!samples.empty()) j["samples"] = samples;
  return j;
}

nlohmann::json MeasurementsFile::to_json() const {
  nlohmann::json j{{"schema", kMeasurementsSchema}, {"source", source}, {"context", context}};
  j["notes"] = notes;
  j["entries"] = nlohmann::json::array();
  for (const auto& e : entries) j["entries"].push_back(e.to_json());
  return j;
}

std::vector<std::string> MeasurementsFile::backends() const {
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (const auto& e : entries)
    if (seen.insert(e.backend).second) out.push_back(e.backend);
  return out;
}

const std::vector<std::string>& measurement_levels() {
  static const std::vector<std::string> levels = {"sampling", "sampling_stage", "block",
                                                  "attention_variant", "attention_internal", "quality"};
  return levels;
}

MeasurementsFile parse_measurements(const std::string& text, const std::string& where) {
  const auto j = json_input::parse(text, where);
  json_input::ObjectReader r(j, where, "");
  const auto schema = r.req_string("schema");
  if (schema != kMeasurementsSchema)
    r.fail("schema", "expected \"" + std::string(kMeasurementsSchema) + "\", got \"" + schema + "\"");
  MeasurementsFile m;
  if (auto s = r.opt_string("source")) m.source = *s;
  if (const auto* c = r.optional("context")) {
    if (!c->is_object()) r.fail("context", "expected an object, got " + json_input::type_name(*c));
    m.context = *c;
  }
  if (const auto* n = r.optional("notes")) {
    if (!n->is_array()) r.fail("notes", "expected an array, got " + json_input::type_name(*n));
    for (size_t i = 0; i < n->size(); ++i) {
      if (!(*n)[i].is_string())
        throw InputError(where + ": " + json_input::index("notes", i) + ": expected a string, got " +
                         json_input::type_name((*n)[i]));
      m.notes.push_back((*n)[i].get<std::string>());
    }
  }
  const auto& entries = r.req_array("entries");
  if (entries.empty()) r.fail("entries", "must hold at least one measurement");
  std::set<std::string> seen;
  for (size_t i = 0; i < entries.size(); ++i) {
    const auto path = json_input::index("entries", i);
    json_input::ObjectReader e(entries[i], where, path);
    Measurement x;
    x.backend = e.req_string("backend");
    x.quantity = e.req_string("quantity");
    x.value = e.req_number("value");
    x.unit = e.req_string("unit", false);
    x.level = e.req_string("level");
    x.provenance = e.req_string("provenance");
    if (auto a = e.opt_string("against")) {
      if (a->empty()) e.fail("against", "must not be empty");
      x.against = *a;
    }
    if (auto t = e.opt_string("tensor")) x.tensor = *t;
    if (auto s = e.opt_string("statistic")) x.statistic = *s;
    if (auto b = e.opt_string("raw_backend")) x.raw_backend = *b;
    if (const auto* s = e.optional("samples")) {
      if (!s->is_array()) e.fail("samples", "expected an array, got " + json_input::type_name(*s));
      if (s->empty()) e.fail("samples", "must hold at least one sample (leave the key out when there are none)");
      for (size_t k = 0; k < s->size(); ++k) {
        const auto& v = (*s)[k];
        if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() <= 0)
          throw InputError(where + ": " + path + ".samples[" + std::to_string(k) +
                           "]: expected a positive number, got " + json_input::type_name(v));
        x.samples.push_back(v.get<double>());
      }
    }
    e.finish();
    if (x.is_metric()) {
      if (x.against.empty()) e.fail("against", "missing (a metric is measured against a backend or \"exact\")");
      if (!x.unit.empty()) e.fail("unit", "a metric has no unit (use \"\")");
      const auto range = metric_range(x.quantity);
      if (range && !range->contains(x.value))
        e.fail("value", x.quantity + " " + format_number(x.value, 6) + " is impossible (" + x.quantity +
                            " is always in " + range->text() + ")");
      if (x.level != "quality") e.fail("level", "a metric's level is \"quality\", got \"" + x.level + "\"");
      if (!x.samples.empty()) e.fail("samples", "only timings have per-run samples");
      const auto& tn = gate_tensor_names();
      if (std::find(tn.begin(), tn.end(), x.tensor) == tn.end())
        e.fail("tensor", "unknown tensor '" + x.tensor + "' (expected attention, stages or a block stage name)");
    } else {
      if (x.unit != "ms" && x.unit != "s")
        e.fail("unit", "expected \"ms\" or \"s\" for timing quantity '" + x.quantity + "', got \"" + x.unit + "\"");
      if (!(x.value > 0)) e.fail("value", "a timing must be positive");
      if (!x.against.empty()) e.fail("against", "only metrics are measured against something");
      const auto& lv = measurement_levels();
      if (x.level == "quality" || std::find(lv.begin(), lv.end(), x.level) == lv.end())
        e.fail("level", "unknown timing level '" + x.level +
                            "' (expected sampling, sampling_stage, block, attention_variant or attention_internal)");
    }
    const std::string key = x.backend + "|" + x.level + "|" + x.quantity + "|" + x.against + "|" +
                            (x.is_metric() ? x.tensor : "");
    if (!seen.insert(key).second)
      throw InputError(where + ": " + path + ": duplicate measurement of " + x.quantity + " (" + x.level +
                       ") for backend '" + x.backend + "'");
    m.entries.push_back(std::move(x));
  }
  r.finish();
  return m;
}

MeasurementsFile load_measurements(const std::string& path) {
  return parse_measurements(json_input::read_text(path), path);
}

std::vector<TimingSource> timing_precedence(const std::string& tensor) {
  if (tensor == "attention")
    return {{"block", {"attention"}},
            {"attention_variant", {"attention"}},
            {"attention_internal", {"total", "total_excluding_external_layout"}}};
  return {{"block", {block_component(tensor)}}};
}

std::string resolve_measured_baseline(const MeasurementsFile& m, const std::string& spec) {
  const auto names = m.backends();
  if (std::find(names.begin(), names.end(), spec) != names.end()) return spec;
  const std::string kind = spec.substr(0, spec.find(':'));
  if (std::find(names.begin(), names.end(), kind) != names.end()) return kind;
  std::string list;
  for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
  throw InputError("measurements" + (m.source.empty() ? std::string() : " from " + m.source) +
                   ": no backend matches the gate's baseline '" + spec + "' (backends: " + list + ")");
}

namespace {

const Measurement* find_timing(const MeasurementsFile& m, const std::string& backend,
                               const TimingSource& src) {
  for (const auto& q : src.quantities)
    for (const auto& e : m.entries)
      if (!e.is_metric() && e.backend == backend && e.level == src.level && e.quantity == q) return &e;
  return nullptr;
}

std::string describe(const Measurement& e) {
  return e.level + " " + e.quantity + (e.statistic.empty() ? "" : " " + e.statistic);
}

}  // namespace

Evidence evidence_from_measurements(const MeasurementsFile& m, const GateFile& gate,
                                    const std::string& baseline, const std::string& candidate,
                                    uint64_t seed) {
  Evidence ev;
  ev.candidate = candidate;
  nlohmann::json used = nlohmann::json::array();
  auto is_baseline_name = [&](const std::string& a) {
    return a == baseline || a == gate.baseline || a == gate.baseline.substr(0, gate.baseline.find(':'));
  };
  for (const auto& e : m.entries) {
    if (!e.is_metric()) continue;
    const bool exact = e.against == "exact";
    if (e.backend == candidate) {
      if (exact) ev.vs_exact[e.tensor][e.quantity] = e.value;
      else if (is_baseline_name(e.against)) ev.vs_baseline[e.tensor][e.quantity] = e.value;
      else continue;
      used.push_back(e.to_json());
    } else if (e.backend == baseline && exact) {
      ev.baseline_vs_exact[e.tensor][e.quantity] = e.value;
      used.push_back(e.to_json());
    }
  }

  // Speed: the first level of the precedence where both sides have a figure;
  // failing that, each side's own first level, said so in a note.
  const auto prec = timing_precedence(gate.tensor);
  const Measurement *cand = nullptr, *base = nullptr;
  for (const auto& src : prec) {
    const Measurement* c = find_timing(m, candidate, src);
    const Measurement* b = find_timing(m, baseline, src);
    if (c && b) {
      cand = c;
      base = b;
      break;
    }
  }
  if (!cand) {
    for (const auto& src : prec)
      if (!cand) cand = find_timing(m, candidate, src);
    for (const auto& src : prec)
      if (!base) base = find_timing(m, baseline, src);
  }
  if (cand && base) {
    SpeedEvidence s;
    // A report's figures carry no clock of ours: its documented single-figure
    // rule (or its own samples) decides, on the report's clock.
    s.clock = kClockImported;
    s.candidate_ms = to_ms(cand->value, cand->unit);
    s.baseline_ms = to_ms(base->value, base->unit);
    s.level = describe(*cand) == describe(*base) ? describe(*cand)
                                                 : describe(*cand) + " vs baseline " + describe(*base);
    if (cand->level != base->level)
      s.note = "timing levels differ: candidate " + describe(*cand) + " (" + cand->provenance +
               ") vs baseline " + describe(*base) + " (" + base->provenance + ")";
    else if (cand->quantity != base->quantity)
      s.note = "compared the candidate's " + cand->quantity + " with the baseline's " + base->quantity +
               " (" + cand->level + ")";
    if (cand->samples.size() >= static_cast<size_t>(kMinTimingSamples) &&
        base->samples.size() >= static_cast<size_t>(kMinTimingSamples)) {
      std::vector<double> cs, bs;
      for (double v : cand->samples) cs.push_back(to_ms(v, cand->unit));
      for (double v : base->samples) bs.push_back(to_ms(v, base->unit));
      double conf = 0.95;
      for (const auto& r : gate.rules)
        if (r.is_speed()) conf = r.confidence;
      s.interval = bootstrap_unpaired(bs, cs, conf, seed);
      s.candidate_ms = median_of(cs);
      s.baseline_ms = median_of(bs);
    } else {
      s.single_figure = true;
    }
    // Every other level both sides have, beside the deciding one.
    for (const auto& e : m.entries) {
      if (e.is_metric() || e.backend != candidate || &e == cand) continue;
      for (const auto& b : m.entries) {
        if (b.is_metric() || b.backend != baseline || b.level != e.level || b.quantity != e.quantity) continue;
        const double cm = to_ms(e.value, e.unit), bm = to_ms(b.value, b.unit);
        const bool secs = e.unit == "s" && b.unit == "s";
        s.other_levels.push_back({{"level", e.level},
                                  {"quantity", e.quantity},
                                  {"candidate", secs ? e.value : cm},
                                  {"baseline", secs ? b.value : bm},
                                  {"unit", secs ? "s" : "ms"},
                                  {"speedup", bm / cm}});
      }
    }
    ev.speed = s;
  }
  ev.details["measurements_used"] = used;
  ev.details["speed"] = ev.speed ? ev.speed->to_json() : nlohmann::json();
  return ev;
}

}  // namespace ts
