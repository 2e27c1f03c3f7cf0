#include "history/record.hpp"

#include <cmath>
#include <ctime>

namespace ts::history {
namespace {

std::optional<double> num(const nlohmann::json& j, const char* key) {
  if (!j.is_object()) return std::nullopt;
  auto it = j.find(key);
  if (it == j.end() || !it->is_number()) return std::nullopt;
  const double v = it->get<double>();
  return std::isfinite(v) ? std::optional<double>(v) : std::nullopt;
}
std::optional<std::string> str(const nlohmann::json& j, const char* key) {
  if (!j.is_object()) return std::nullopt;
  auto it = j.find(key);
  if (it == j.end() || !it->is_string() || it->get<std::string>().empty()) return std::nullopt;
  return it->get<std::string>();
}

const GateRule* rule_by_id(const GateFile& g, const std::string& id) {
  for (const auto& r : g.rules)
    if (r.id == id) return &r;
  return nullptr;
}

RuleRecord rule_record(const RuleOutcome& o, int ordinal, const GateFile& gate) {
  RuleRecord r;
  r.ordinal = ordinal;
  r.id = o.id;
  r.metric = o.metric;
  r.against = o.against;
  r.tensor = o.tensor;
  r.status = rule_status_name(o.status);
  r.bound = o.bound;
  r.message = o.message;
  r.builtin = o.builtin;
  r.optional = o.optional;
  if (o.figure) {
    if (std::isfinite(*o.figure)) r.figure = *o.figure;
    else r.figure_text = std::isnan(*o.figure) ? "NaN" : (*o.figure > 0 ? "Infinity" : "-Infinity");
  }
  if (o.limit && std::isfinite(*o.limit)) r.limit = *o.limit;
  if (const GateRule* g = rule_by_id(gate, o.id)) {
    r.bound_min = g->min;
    r.bound_max = g->max;
    const bool upper = g->max || g->max_ratio_to_baseline || g->growth;
    r.worse = upper && g->min ? "away" : g->min ? "down" : "up";
  } else if (o.metric == "speedup" || o.metric == "cosine" || o.metric == "identical_fraction") {
    r.worse = "down";  // a built-in check of a figure where more is better
  }
  if (o.interval) {
    r.interval_lower = o.interval->lower;
    r.interval_upper = o.interval->upper;
    r.interval_confidence = o.interval->confidence;
    r.interval_samples = o.interval->samples;
  }
  return r;
}

void add_groups(CaseRecord& c, const nlohmann::json& worst) {
  if (!worst.is_object()) return;
  const std::string metric = worst.value("metric", std::string("rel_l2"));
  for (const auto& [key, name] : {std::pair{"per_head", "head"}, {"per_query_block", "query_block"}, {"per_frame", "frame"}}) {
    auto it = worst.find(key);
    if (it == worst.end() || !it->is_array()) continue;
    int rank = 0;
    for (const auto& g : *it) {
      GroupRecord gr;
      gr.breakdown = name;
      gr.metric = metric;
      gr.rank = rank++;
      if (g.contains("index") && g["index"].is_number_integer()) gr.index = g["index"].get<int64_t>();
      gr.value = num(g, "value");
      c.groups.push_back(gr);
    }
  }
  if (auto v = num(worst, "cond")) {
    GroupRecord gr;
    gr.breakdown = "cond";
    gr.metric = metric;
    gr.value = v;
    c.groups.push_back(gr);
  }
}

// Versions a case's evidence names: a stored output's capture parameters (the Python replay
// writes torch's version and the kernel's name there), a plugin's own parameters.
nlohmann::json versions_of(const nlohmann::json& details) {
  nlohmann::json v = nlohmann::json::object();
  const nlohmann::json params = details.value("params", nlohmann::json::object());
  for (const char* where : {"stored_params", "plugin"}) {
    const nlohmann::json src = params.is_object() ? params.value(where, nlohmann::json::object()) : nlohmann::json();
    if (!src.is_object()) continue;
    for (const char* key : {"torch", "torch_version", "cuda", "cudnn", "triton", "kernel", "kernel_version", "version"})
      if (src.contains(key) && (src[key].is_string() || src[key].is_number()) && !v.contains(key)) v[key] = src[key];
  }
  return v;
}

std::optional<std::string> device_of(const nlohmann::json& details, const nlohmann::json& context) {
  if (auto d = str(details, "device")) return d;
  if (details.contains("speed"))
    if (auto d = str(details["speed"], "device")) return d;
  const nlohmann::json params = details.value("params", nlohmann::json::object());
  if (params.is_object() && params.contains("stored_params"))
    if (auto d = str(params["stored_params"], "device")) return d;
  return str(context, "device");
}

}  // namespace

std::string iso_utc(std::chrono::system_clock::time_point t) {
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
  const std::time_t secs = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  ::gmtime_r(&secs, &tm);
  char buf[96];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(ms % 1000));
  return buf;
}

RunRecord make_run_record(const GateRun& run, const Provenance& provenance, std::chrono::system_clock::time_point now) {
  RunRecord r;
  r.provenance = provenance;
  r.recorded_at = iso_utc(now);
  r.recorded_unix_ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count();
  r.gate = run.gate.name;
  r.gate_source = run.gate.source;
  r.mode = run.mode;
  r.input = run.input;
  r.baseline = run.baseline;
  r.context = run.context;
  const std::optional<std::string> identity = str(run.context, "fixture_identity");
  const std::string fixture = str(run.context, "fixture").value_or(run.input);
  int ordinal = 0;
  for (const CandidateVerdict& v : run.candidates) {
    CaseRecord c;
    c.ordinal = ordinal++;
    c.candidate = v.candidate;
    c.verdict = verdict_name(v.verdict);
    c.error = v.error;
    c.fixture_identity = identity;
    c.fixture_path = fixture;
    c.details = v.details;
    c.backend = str(v.details, "backend").value_or("");
    if (v.details.contains("params") && v.details["params"].is_object()) c.params = v.details["params"];
    c.versions = versions_of(v.details);
    c.device = device_of(v.details, run.context);
    c.shown = v.shown;
    if (v.details.contains("speed") && v.details["speed"].is_object()) {
      const nlohmann::json& s = v.details["speed"];
      c.clock = str(s, "clock");
      if (!c.clock && !v.clock.empty()) c.clock = v.clock;
      c.timing_run = str(s, "timing_run");
      c.speed_missing = str(s, "missing");
      c.candidate_ms = num(s, "candidate_ms");
      c.baseline_ms = num(s, "baseline_ms");
      if (s.contains("interval") && s["interval"].is_object()) {
        const nlohmann::json& in = s["interval"];
        c.speedup = num(in, "point");
        c.speedup_lower = num(in, "lower");
        c.speedup_upper = num(in, "upper");
        c.speed_confidence = num(in, "confidence");
        if (in.contains("samples") && in["samples"].is_number_integer()) c.speed_samples = in["samples"].get<int64_t>();
        c.speed_method = str(in, "method");
      }
    }
    if (v.details.contains("worst_vs_baseline")) {
      c.worst = v.details["worst_vs_baseline"];
      add_groups(c, c.worst);
    }
    int k = 0;
    for (const RuleOutcome& o : v.outcomes) c.rules.push_back(rule_record(o, k++, run.gate));
    r.cases.push_back(std::move(c));
  }
  return r;
}

}  // namespace ts::history
