#include "drivers/case.hpp"

namespace ts {

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

CaseSource Case::source_of(const std::string& spec) {
  return spec.rfind("stored:", 0) == 0 ? CaseSource::stored : CaseSource::computed;
}

std::string Case::id() const {
  return std::string(case_source_name(source)) + "|" + input + "|" + baseline + "|" +
         (source == CaseSource::stage ? stage_set + "/" : "") + candidate;
}

std::string Case::repro() const {
  switch (source) {
    case CaseSource::measurements:
      return command_line({"gate"}, {{"--gate", gate_arg}, {"--measurements", input}, {"--baseline", baseline},
                                     {"--candidate", candidate}});
    case CaseSource::stage:
      return command_line({"compare", input, stage_set, baseline, "--stages"}, {{"--gate", gate_arg}, {"--exact", exact_set}});
    case CaseSource::chain:
      return command_line({"chain", input}, {{"--gate", gate_arg}, {"--baseline", baseline}, {"--candidate", candidate}});
    case CaseSource::computed:
    case CaseSource::stored:
      break;
  }
  return command_line({"gate"}, {{"--gate", gate_arg}, {"--fixture", input}, {"--baseline", baseline},
                                 {"--candidate", candidate}});
}

std::string command_line(const std::vector<std::string>& words,
                         const std::vector<std::pair<std::string, std::string>>& flags) {
  std::string line = "touchstone";
  for (const auto& w : words) line += " " + (w.rfind("--", 0) == 0 ? w : shell_quote(w));
  for (const auto& [flag, value] : flags)
    if (!value.empty()) line += " " + flag + " " + shell_quote(value);
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
