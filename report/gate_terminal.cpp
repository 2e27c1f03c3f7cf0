#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <sstream>

#include "report/gate_report.hpp"

namespace ts {
namespace {

std::string header(const GateRule& r) {
  return r.id + ": " + r.metric + (r.is_speed() ? "" : " vs " + r.against) + " " + r.bound_text();
}

std::string cell(const RuleOutcome& o) {
  std::string s;
  if (o.figure) s.append(format_number(*o.figure)).append(" ");
  if (o.interval) s.append("[").append(format_number(o.interval->lower)).append(", ").append(format_number(o.interval->upper)).append("] ");
  switch (o.status) {
    case RuleStatus::pass: s.append("pass"); break;
    case RuleStatus::fail: s.append("FAIL"); break;
    case RuleStatus::inconclusive: s.append("open"); break;
    case RuleStatus::missing: s.append(o.optional ? "n/a" : "missing"); break;
  }
  return s;
}

std::string pad(const std::string& s, size_t w) { return s + std::string(w > s.size() ? w - s.size() : 0, ' '); }

// Writes `text` in lines of at most `width` characters, broken at spaces;
// continuation lines start with `indent` spaces. A word longer than a whole
// line is cut (only then can a line end inside a word). With `shell`, each
// broken line ends in a backslash so that a repro line still pastes into a
// shell as one command.
void wrapped(std::ostream& out, const std::string& text, size_t width, size_t indent, bool shell = false) {
  if (const size_t nl = text.find('\n'); nl != std::string::npos) {
    wrapped(out, text.substr(0, nl), width, indent, shell);
    wrapped(out, std::string(indent, ' ') + text.substr(nl + 1), width, indent, shell);
    return;
  }
  const size_t lead = text.find_first_not_of(' ');
  if (lead == std::string::npos) {
    out << text << "\n";
    return;
  }
  // Words; in a shell line a single-quoted argument is one word (a line
  // continuation inside quotes would be taken literally).
  std::vector<std::string> words{""};
  bool quoted = false;
  for (size_t i = lead; i < text.size(); ++i) {
    const char ch = text[i];
    if (shell && ch == '\'') quoted = !quoted;
    if (ch == ' ' && !quoted) {
      if (!words.back().empty()) words.emplace_back();
    } else {
      words.back() += ch;
    }
  }
  if (words.back().empty()) words.pop_back();
  const std::string between = shell ? " \\" : "", inside = shell ? "\\" : "";
  const size_t limit = std::max(width - between.size(), indent + 1);
  std::string line(lead, ' ');
  bool empty = true;  // no word on this line yet
  for (std::string w : words) {
    if (line.size() + (empty ? 0 : 1) + w.size() <= limit) {
      line += (empty ? "" : " ") + w;
      empty = false;
      continue;
    }
    if (!empty) {
      out << line << between << "\n";
      line = std::string(indent, ' ');
    }
    // Cut pieces of a shell word continue at column 0 (an indent would split
    // the word); a piece that ends inside single quotes closes them, and the
    // next reopens them ('abc'\ + 'def' is the word abcdef again).
    while (line.size() + w.size() > limit) {
      size_t take = limit > line.size() + 2 ? limit - line.size() - 2 : 1;
      if (shell) {
        while (take > 1 && w[take - 1] == '\\') --take;  // never part an escape from its character
        bool q = false;
        for (size_t i = 0; i < take; ++i)
          if (w[i] == '\'' && (q || i == 0 || w[i - 1] != '\\')) q = !q;
        out << line << w.substr(0, take) << (q ? "'" : "") << inside << "\n";
        w = (q ? "'" : "") + w.substr(take);
        line.clear();
      } else {
        out << line << w.substr(0, take) << "\n";
        w.erase(0, take);
        line = std::string(indent, ' ');
      }
    }
    line += w;
    empty = false;
  }
  out << line << "\n";
}

bool shown_detail(const RuleOutcome& o) {
  return o.status == RuleStatus::fail || o.status == RuleStatus::inconclusive ||
         (o.status == RuleStatus::missing && !o.optional);
}

// A candidate's explanation: failing, open and missing rules with their
// figures and bounds, notes, other timing levels, the repro line.
// Whether a rule failed only because the candidate holds non-finite values
// (gates/verdict.cpp: NaN never passes), which finite_guard reports itself.
bool failed_for_nonfinite(const RuleOutcome& o) {
  return o.status == RuleStatus::fail && !o.builtin &&
         o.message.find(": candidate has ") != std::string::npos &&
         o.message.find(" non-finite values (NaN never passes)") != std::string::npos;
}

void details(std::ostream& out, const GateRun& run, const CandidateVerdict& c, size_t width) {
  for (const auto& e : explained_rules(c)) wrapped(out, "  " + e.ids + " [" + e.status + "]: " + e.message, width, 6);
  for (const auto& n : c.notes) wrapped(out, "  note: " + n, width, 6);
  const auto& speed = c.details.contains("speed") ? c.details["speed"] : nlohmann::json();
  if (speed.is_object() && speed.contains("other_levels") && !speed["other_levels"].empty()) {
    std::string line;
    for (const auto& l : speed["other_levels"]) {
      const std::string q = l["quantity"].get<std::string>(), lv = l["level"].get<std::string>();
      const bool headline = lv == "sampling" || q.find("total") != std::string::npos ||
                            q == "module_forward" || q == run.gate.tensor;
      if (!headline) continue;
      const std::string unit = l["unit"].get<std::string>();
      line += (line.empty() ? "" : ", ") + lv + " " + q + " " + format_number(l["candidate"].get<double>()) +
              " vs " + format_number(l["baseline"].get<double>()) + " " + unit + " (" +
              format_number(l["speedup"].get<double>()) + "x)";
    }
    if (!line.empty()) wrapped(out, "  other levels: " + line, width, 6);
  }
  if (!c.repro.empty()) wrapped(out, "  repro: " + c.repro, width, 6, true);
}

// One row per candidate, one column per rule; "" when it is wider than `width`.
std::string table(const GateRun& run, size_t width) {
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> head{"candidate"};
  head.insert(head.end(), run.columns.begin(), run.columns.end());
  for (const auto& r : run.gate.rules) head.push_back(header(r));
  head.push_back("verdict");
  rows.push_back(head);
  for (const auto& c : run.candidates) {
    std::vector<std::string> row{c.candidate};
    for (size_t i = 0; i < run.columns.size(); ++i) row.push_back(shown_value(c, i));
    const RuleOutcomes by_id(c);
    for (const auto& r : run.gate.rules) {
      const RuleOutcome* o = by_id.find(r.id);
      row.push_back(o ? cell(*o) : "-");
    }
    row.push_back(verdict_name(c.verdict));
    rows.push_back(row);
  }
  std::vector<size_t> w(head.size(), 0);
  for (const auto& row : rows)
    for (size_t i = 0; i < row.size(); ++i) w[i] = std::max(w[i], row[i].size());
  size_t total = 3 * (w.size() - 1);
  for (size_t x : w) total += x;
  if (total > width) return "";
  std::ostringstream out;
  for (size_t k = 0; k < rows.size(); ++k) {
    for (size_t i = 0; i < rows[k].size(); ++i)
      out << (i ? " | " : "") << (i + 1 < rows[k].size() ? pad(rows[k][i], w[i]) : rows[k][i]);
    out << "\n";
    if (k == 0) {
      for (size_t i = 0; i < w.size(); ++i) out << (i ? "-|-" : "") << std::string(w[i], '-');
      out << "\n";
    }
  }
  return out.str();
}

// Each candidate in a block of its own: its verdict and name, then one line
// per shown column and per rule (label, then figure and outcome), then its
// explanation. Labels are aligned across blocks; a line that would not fit
// puts the value under its label.
std::string blocks(const GateRun& run, size_t width) {
  std::vector<std::string> labels(run.columns.begin(), run.columns.end());
  for (const auto& r : run.gate.rules) labels.push_back(header(r));
  size_t lw = 0;
  for (const auto& l : labels) lw = std::max(lw, l.size());
  std::ostringstream out;
  for (size_t k = 0; k < run.candidates.size(); ++k) {
    const auto& c = run.candidates[k];
    if (k) out << "\n";
    wrapped(out, std::string(verdict_name(c.verdict)) + " " + c.candidate, width, 4);
    std::vector<std::string> values;
    for (size_t i = 0; i < run.columns.size(); ++i) values.push_back(shown_value(c, i));
    const RuleOutcomes by_id(c);
    for (const auto& r : run.gate.rules) {
      const RuleOutcome* o = by_id.find(r.id);
      values.push_back(o ? cell(*o) : "-");
    }
    for (size_t i = 0; i < labels.size(); ++i) {
      if (2 + lw + 2 + values[i].size() <= width) {
        out << "  " << pad(labels[i], lw) << "  " << values[i] << "\n";
      } else {
        wrapped(out, "  " + labels[i], width, 6);
        wrapped(out, "      " + values[i], width, 6);
      }
    }
    details(out, run, c, width);
  }
  return out.str();
}

}  // namespace

namespace {

bool guard_failed(const CandidateVerdict& c) {
  return std::any_of(c.outcomes.begin(), c.outcomes.end(), [](const RuleOutcome& o) {
    return o.builtin && o.id == "finite_guard" && o.status == RuleStatus::fail;
  });
}

}  // namespace

std::string rule_reason(const CandidateVerdict& c, const RuleOutcome& o) {
  return failed_for_nonfinite(o) && guard_failed(c) ? "NaN/Inf in the candidate: see finite_guard" : o.message;
}

std::vector<ExplainedRule> explained_rules(const CandidateVerdict& c) {
  const bool guard_failed = ts::guard_failed(c);
  std::vector<ExplainedRule> out;
  std::string nonfinite;
  for (const auto& o : c.outcomes)
    if (guard_failed && failed_for_nonfinite(o)) nonfinite += (nonfinite.empty() ? "" : ", ") + o.id;
  if (!nonfinite.empty()) out.push_back({nonfinite, "fail", "the candidate's non-finite values (finite_guard below)"});
  for (const auto& o : c.outcomes)
    if (shown_detail(o) && !(guard_failed && failed_for_nonfinite(o)))
      out.push_back({o.id, std::string(rule_status_name(o.status)), o.message});
  return out;
}

int terminal_width() {
  // COLUMNS first, as the shell's tools read it (a script may set it for a
  // log); then the terminal stdout is; else a width that reads in a CI log.
  if (const char* env = std::getenv("COLUMNS"); env && *env) {
    errno = 0;
    char* end = nullptr;
    const long v = std::strtol(env, &end, 10);
    if (errno == 0 && end && *end == '\0' && v > 0) return static_cast<int>(std::clamp<long>(v, kMinTerminalWidth, 10000));
  }
  if (::isatty(STDOUT_FILENO)) {
    winsize ws{};
    if (::ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
      return std::max<int>(ws.ws_col, kMinTerminalWidth);
  }
  return kDefaultTerminalWidth;
}

std::string wrap_for_terminal(const std::string& text, int width, int indent, bool shell) {
  std::ostringstream out;
  wrapped(out, text, static_cast<size_t>(std::max(width, kMinTerminalWidth)), static_cast<size_t>(std::max(indent, 0)),
          shell);
  return out.str();
}

std::string wrap_each_line(const std::string& text, int width) {
  std::ostringstream out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.size() <= static_cast<size_t>(std::max(width, kMinTerminalWidth))) {  // as it was laid out
      out << line << "\n";
      continue;
    }
    const size_t lead = std::min(line.find_first_not_of(' '), line.size());
    std::string wrapped_line = wrap_for_terminal(line.substr(lead), width - static_cast<int>(lead), 4);
    // Every line of the wrapped block keeps the original line's indent.
    for (size_t at = 0; at < wrapped_line.size();) {
      const size_t nl = wrapped_line.find('\n', at);
      out << std::string(lead, ' ') << wrapped_line.substr(at, nl - at) << "\n";
      at = nl == std::string::npos ? wrapped_line.size() : nl + 1;
    }
  }
  return out.str();
}

std::string render_terminal(const GateRun& run) { return render_terminal(run, terminal_width()); }

std::string render_terminal(const GateRun& run, int width_in) {
  const size_t width = static_cast<size_t>(std::max(width_in, kMinTerminalWidth));
  std::ostringstream out;
  wrapped(out, "gate " + run.gate.name + " (" + run.gate.source + "), baseline " + run.baseline + ", tensor " +
                   run.gate.tensor, width, 4);
  wrapped(out, "input: " + run.input + " (" + run.mode + ")", width, 4);
  out << "\n";

  if (const std::string t = table(run, width); !t.empty()) {
    out << t;
    for (const auto& c : run.candidates) {
      if (c.verdict == Verdict::accept && c.notes.empty()) continue;
      out << "\n";
      wrapped(out, std::string(verdict_name(c.verdict)) + " " + c.candidate, width, 4);
      details(out, run, c, width);
    }
  } else {
    out << blocks(run, width);
  }
  out << "\n";
  wrapped(out, "summary: " + count_verdicts(run.candidates).text(false) + "; exit code " + std::to_string(run.exit_code()),
          width, 4);
  return out.str();
}

}  // namespace ts
