#include <algorithm>
#include <cmath>
#include <sstream>

#include "report/gate_report.hpp"

namespace ts {
namespace {


// Pipes and newlines would break a table row.
std::string md(const std::string& s) {
  std::string o;
  for (char ch : s) {
    if (ch == '|') o += "\\|";
    else if (ch == '\n' || ch == '\r') o += ' ';
    else o += ch;
  }
  return o;
}

const char* mark(const RuleOutcome& o) {
  switch (o.status) {
    case RuleStatus::pass: return "pass";
    case RuleStatus::fail: return "**FAIL**";
    case RuleStatus::inconclusive: return "open";
    case RuleStatus::missing: return o.optional ? "n/a" : "missing";
  }
  return "";
}

}  // namespace

std::string render_markdown(const GateRun& run) {
  int acc = 0;
  for (const auto& c : run.candidates) acc += c.verdict == Verdict::accept;
  std::ostringstream out;
  out << "### touchstone gate `" << md(run.gate.name) << "`: " << acc << " of " << run.candidates.size()
      << " accepted\n\n";
  out << "Baseline `" << md(run.baseline) << "`, tensor `" << md(run.gate.tensor) << "`, input `"
      << md(run.input) << "` (" << run.mode << ").\n\n";
  out << "| candidate |";
  for (const auto& col : run.columns) out << " " << md(col) << " |";
  for (const auto& r : run.gate.rules)
    out << " " << md(r.id) << " (" << md(r.metric) << (r.is_speed() ? "" : " vs " + r.against) << " "
        << md(r.bound_text()) << ") |";
  out << " verdict |\n|---|";
  for (size_t i = 0; i < run.columns.size(); ++i) out << "---|";
  for (size_t i = 0; i < run.gate.rules.size(); ++i) out << "---|";
  out << "---|\n";
  for (const auto& c : run.candidates) {
    out << "| `" << md(c.candidate) << "` |";
    for (size_t i = 0; i < run.columns.size(); ++i) out << " " << md(shown_value(c, i)) << " |";
    const RuleOutcomes by_id(c);
    for (const auto& r : run.gate.rules) {
      const RuleOutcome* it = by_id.find(r.id);
      if (!it) {
        out << " - |";
        continue;
      }
      // A speed figure comes with its interval, as in the other reports.
      out << " " << (it->figure ? format_number(*it->figure) + " " : "")
          << (it->interval ? "[" + format_number(it->interval->lower) + ", " + format_number(it->interval->upper) + "] "
                           : "")
          << mark(*it) << " |";
    }
    // Which clock decided the speed, on every row (ACCEPTs included).
    out << " **" << verdict_name(c.verdict) << "**" << (c.clock.empty() ? "" : " (clock " + c.clock + ")") << " |\n";
  }
  bool any = false;
  for (const auto& c : run.candidates) {
    if (c.verdict == Verdict::accept) continue;
    if (!any) out << "\n";
    any = true;
    out << "- **" << verdict_name(c.verdict) << "** `" << md(c.candidate) << "`:";
    for (const auto& e : explained_rules(c)) out << " " << md(e.ids) << ": " << md(e.message) << ";";
    for (const auto& n : c.notes) out << " _" << md(n) << "_;";
    if (!c.repro.empty()) out << " repro: `" << c.repro << "`";
    out << "\n";
  }
  return out.str();
}

}  // namespace ts
