#include <algorithm>
#include <cmath>
#include <sstream>

#include "gates/report.hpp"

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

}  // namespace

std::string render_terminal(const GateRun& run) {
  std::ostringstream out;
  out << "gate " << run.gate.name << " (" << run.gate.source << "), baseline " << run.baseline
      << ", tensor " << run.gate.tensor << "\n";
  out << "input: " << run.input << " (" << run.mode << ")\n\n";

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
  std::vector<size_t> width(head.size(), 0);
  for (const auto& row : rows)
    for (size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  for (size_t k = 0; k < rows.size(); ++k) {
    for (size_t i = 0; i < rows[k].size(); ++i)
      out << (i ? " | " : "") << (i + 1 < rows[k].size() ? pad(rows[k][i], width[i]) : rows[k][i]);
    out << "\n";
    if (k == 0) {
      for (size_t i = 0; i < width.size(); ++i) out << (i ? "-|-" : "") << std::string(width[i], '-');
      out << "\n";
    }
  }

  int acc = 0, rej = 0, inc = 0;
  for (const auto& c : run.candidates) {
    (c.verdict == Verdict::accept ? acc : c.verdict == Verdict::reject ? rej : inc)++;
    const bool show = c.verdict != Verdict::accept || !c.notes.empty();
    if (!show) continue;
    out << "\n" << verdict_name(c.verdict) << " " << c.candidate << "\n";
    for (const auto& o : c.outcomes) {
      const bool bad = o.status == RuleStatus::fail || o.status == RuleStatus::inconclusive ||
                       (o.status == RuleStatus::missing && !o.optional);
      if (!bad) continue;
      out << "  " << o.id << " [" << rule_status_name(o.status) << "]: " << o.message << "\n";
    }
    for (const auto& n : c.notes) out << "  note: " << n << "\n";
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
                " vs " + format_number(l["baseline"].get<double>()) + " " + unit + " (" + format_number(l["speedup"].get<double>()) + "x)";
      }
      if (!line.empty()) out << "  other levels: " << line << "\n";
    }
    if (!c.repro.empty()) out << "  repro: " << c.repro << "\n";
  }
  out << "\nsummary: " << acc << " accepted, " << rej << " rejected, " << inc << " inconclusive; exit code "
      << run.exit_code() << "\n";
  return out.str();
}

std::string render_json(const GateRun& run) { return run.to_json().dump(2) + "\n"; }

}  // namespace ts
