#include "drivers/case.hpp"

#include <cstdio>
#include <cstdlib>

#include "core/decimal_text.hpp"
#include "core/error.hpp"
#include "core/timing_defaults.hpp"

namespace ts {
namespace {

std::string number_text(double v) { return shortest_decimal(v); }

// The options of a case that can change its verdict, as `touchstone gate`
// reads them, each only where it is not gate's default.
void option_flags(const CaseOptions& o, std::vector<std::pair<std::string, std::string>>& flags,
                  std::vector<std::string>& switches, bool fixture) {
  if (fixture) {
    if (!o.timed) {
      flags.push_back({"--pairs", "0"});
    } else {
      if (o.pairs != kGateTiming.pairs) flags.push_back({"--pairs", std::to_string(o.pairs)});
      if (o.warmup != kGateTiming.warmup) flags.push_back({"--warmup", std::to_string(o.warmup)});
      if (o.rotate != kGateTiming.rotate) flags.push_back({"--rotate", std::to_string(o.rotate)});
      if (o.budget_s > 0) flags.push_back({"--budget-s", number_text(o.budget_s)});
    }
    if (o.exact != "auto") flags.push_back({"--exact", o.exact});
  }
  if (o.seed != 1) flags.push_back({"--seed", std::to_string(o.seed)});
  if (o.accuracy_only) switches.push_back("--accuracy-only");
  if (fixture && o.allow_nonfinite) switches.push_back("--allow-nonfinite");
  if (fixture && o.allow_slow) switches.push_back("--allow-slow");
}

}  // namespace

const char* case_source_name(CaseSource s) {
  switch (s) {
    case CaseSource::computed: return "computed";
    case CaseSource::stored: return "stored";
    case CaseSource::measurements: return "measurements";
    case CaseSource::stage: return "stage";
    case CaseSource::chain: return "chain";
  }
  return "?";
}

bool CaseOptions::same_verdicts(const CaseOptions& o) const {
  return pairs == o.pairs && warmup == o.warmup && rotate == o.rotate && budget_s == o.budget_s && seed == o.seed &&
         timed == o.timed && accuracy_only == o.accuracy_only && allow_nonfinite == o.allow_nonfinite &&
         exact == o.exact;
}

CaseSource Case::source_of(const std::string& spec) {
  return is_stored_spec(spec) ? CaseSource::stored : CaseSource::computed;
}

std::string Case::id() const {
  return std::string(case_source_name(source)) + "|" + input + "|" + baseline + "|" +
         (source == CaseSource::stage ? stage_set + "/" : "") + candidate;
}

std::string Case::name() const {
  std::vector<std::pair<std::string, std::string>> flags = driver_flags;
  std::vector<std::string> switches;
  option_flags(options, flags, switches, source == CaseSource::computed || source == CaseSource::stored);
  std::string n = id() + "|gate=" + gate_arg;
  for (const auto& [f, v] : flags) n += "|" + f + "=" + v;
  for (const auto& s : switches) n += "|" + s;
  return n;
}

std::string Case::repro() const {
  std::vector<std::pair<std::string, std::string>> flags;
  std::vector<std::string> switches;
  switch (source) {
    case CaseSource::measurements:
      flags = {{"--gate", gate_arg}, {"--measurements", input}, {"--baseline", baseline}, {"--candidate", candidate}};
      option_flags(options, flags, switches, false);
      return command_line({"gate"}, flags, switches);
    case CaseSource::stage:
      return command_line({"compare", input, stage_set, baseline, "--stages"}, {{"--gate", gate_arg}, {"--exact", exact_set}});
    case CaseSource::chain:
      flags = {{"--gate", gate_arg}, {"--baseline", baseline}, {"--candidate", candidate}};
      flags.insert(flags.end(), driver_flags.begin(), driver_flags.end());
      option_flags(options, flags, switches, false);
      return command_line({"chain", input}, flags, switches);
    case CaseSource::computed:
    case CaseSource::stored:
      break;
  }
  flags = {{"--gate", gate_arg}, {"--fixture", input}, {"--baseline", baseline}, {"--candidate", candidate}};
  option_flags(options, flags, switches, true);
  return command_line({"gate"}, flags, switches);
}

std::vector<Case> make_cases(const CaseRequest& r) {
  if (!r.taus.empty() && r.taus.size() != r.candidates.size())
    throw InternalError("make_cases: " + std::to_string(r.taus.size()) + " taus for " +
                        std::to_string(r.candidates.size()) + " candidates");
  const bool fixture = r.source == CaseSource::computed || r.source == CaseSource::stored;
  std::optional<BackendSpec> baseline;
  if (fixture) baseline = BackendSpec::try_parse(r.baseline);
  std::vector<Case> cases;
  cases.reserve(r.candidates.size());
  for (size_t i = 0; i < r.candidates.size(); ++i) {
    Case c;
    c.input = r.input;
    c.baseline = r.baseline;
    c.candidate = r.candidates[i];
    c.gate_arg = r.gate_arg;
    c.stage_set = r.stage_set;
    c.exact_set = r.exact_set;
    c.options = r.options;
    c.driver_flags = r.driver_flags;
    if (!r.taus.empty()) c.tau = r.taus[i];
    if (fixture) {
      c.baseline_spec = baseline;
      c.candidate_spec = BackendSpec::try_parse(c.candidate);
      c.source = c.candidate_spec && c.candidate_spec->is_stored() ? CaseSource::stored : CaseSource::computed;
    } else {
      c.source = r.source;
    }
    cases.push_back(std::move(c));
  }
  return cases;
}

std::string command_line(const std::vector<std::string>& words,
                         const std::vector<std::pair<std::string, std::string>>& flags,
                         const std::vector<std::string>& switches) {
  std::string line = "touchstone";
  for (const auto& w : words) line += " " + (w.rfind("--", 0) == 0 ? w : shell_quote(w));
  for (const auto& [flag, value] : flags)
    if (!value.empty()) line += " " + flag + " " + shell_quote(value);
  for (const auto& s : switches) line += " " + s;
  return line;
}

std::string shell_quote(const std::string& s) {
  if (!s.empty() &&
      s.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.,:=/+@%") ==
          std::string::npos)
    return s;
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

}  // namespace ts
