#include "drivers/case.hpp"

namespace ts {

const char* case_source_name(CaseSource s) {
  switch (s) {
    case CaseSource::computed: return "computed";
    case CaseSource::stored: return "stored";
    case CaseSource::measurements: return "measurements";
    case CaseSource::stage: return "stage";
  }
  return "?";
}

CaseSource Case::source_of(const std::string& spec) {
  return spec.rfind("stored:", 0) == 0 ? CaseSource::stored : CaseSource::computed;
}

std::string Case::id() const {
  return std::string(case_source_name(source)) + "|" + input + "|" + baseline + "|" +
         (source == CaseSource::stage ? stage_set + "/" : "") + candidate;
}

std::string Case::repro() const {
  const std::string gate = gate_arg.empty() ? "" : " --gate " + shell_quote(gate_arg);
  switch (source) {
    case CaseSource::measurements:
      return "touchstone gate" + gate + " --measurements " + shell_quote(input) + " --baseline " +
             shell_quote(baseline) + " --candidate " + shell_quote(candidate);
    case CaseSource::stage:
      return "touchstone compare " + shell_quote(input) + " " + shell_quote(stage_set) + " " + shell_quote(baseline) +
             " --stages" + gate + (exact_set.empty() ? "" : " --exact " + shell_quote(exact_set));
    case CaseSource::computed:
    case CaseSource::stored:
      break;
  }
  return "touchstone gate" + gate + " --fixture " + shell_quote(input) + " --baseline " + shell_quote(baseline) +
         " --candidate " + shell_quote(candidate);
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
