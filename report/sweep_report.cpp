// The writers of touchstone sweep (drivers/sweep.cpp computes the rows and the block chain).
#include "report/sweep_report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <sstream>
#include <vector>

#include "core/decimal_text.hpp"
#include "core/error.hpp"
#include "report/gate_report.hpp"
#include "report/stage_report.hpp"
#include "report/terminal.hpp"

namespace ts {
namespace {

std::string fmt4(const nlohmann::json& v, const char* f = "%.4g") {
  if (v.is_string()) return v.get<std::string>();  // NaN, Infinity: figure_json
  if (!v.is_number()) return "undef";
  if (std::isnan(v.get<double>())) return "NaN";
  char buf[32];
  std::snprintf(buf, sizeof buf, f, v.get<double>());
  return buf;
}

// The lines above every rendering: what was run, and the baseline's own distance.
std::vector<std::string> preface(const SweepResult& r) {
  const auto& j = r.json;
  char line[512];
  std::vector<std::string> out;
  std::snprintf(line, sizeof line, "sweep on %s: S=%lld H=%lld D=%lld, %d threads", r.fixture.c_str(),
                (long long)j["S"].get<int64_t>(), (long long)j["H"].get<int64_t>(), (long long)j["D"].get<int64_t>(),
                j["threads"].get<int>());
  out.push_back(line);
  std::snprintf(line, sizeof line, "exact: %s (%s), %.0f ms", j["exact"]["name"].get<std::string>().c_str(),
                j["exact"]["why"].get<std::string>().c_str(), j["exact"]["ms"].get<double>());
  out.push_back(line);
  std::snprintf(line, sizeof line, "baseline %s: rel_l2 vs exact %s, cosine %s, %.0f ms",
                j["baseline"]["name"].get<std::string>().c_str(), fmt4(j["baseline"]["rel_l2_vs_exact"]).c_str(),
                fmt4(j["baseline"]["cosine_vs_exact"], "%.6f").c_str(), j["baseline"]["ms"].get<double>());
  out.push_back(line);
  if (r.run)
    out.push_back("wall ms: one run of each row, for the record; speed is judged only on timing samples; " +
                  r.run->context.value("speed", std::string()));
  return out;
}

}  // namespace

nlohmann::json sweep_json(const SweepResult& s) {
  nlohmann::json j = s.json;
  if (!s.run) return j;
  if (s.block) {
    j["block"] = s.block_runs;
    j["block"]["stages"] = stage_json(*s.block);
  } else if (!s.block_note.empty()) {
    j["block"] = {{"skipped", s.block_note}};
  } else {
    j["block"] = nullptr;
  }
  return j;
}

std::string sweep_text(const SweepResult& s) {
  std::ostringstream o;
  const int width = terminal_width();
  for (const auto& l : preface(s)) o << wrap_for_terminal(l, width);  // ends its line
  if (s.run) {
    o << "\n" << render_terminal(*s.run, width);
    o << "\n" << (s.block ? render_stage_table(*s.block) : wrap_for_terminal(s.block_note, width));
    return o.str();
  }
  // tau as given (shortest round trip), its column as wide as the longest.
  int tau_width = 8;
  for (const auto& r : s.json["rows"])
    tau_width = std::max(tau_width, static_cast<int>(shortest_decimal(r["tau"].get<double>()).size()));
  char line[256];
  std::snprintf(line, sizeof line, "%*s %8s %12s %12s %12s %12s %10s\n", tau_width, "tau", "density", "rel_l2/base",
                "cos/base", "rel_l2/exact", "cos/exact", "ms");
  o << line;
  for (const auto& r : s.json["rows"]) {
    std::snprintf(line, sizeof line, "%*s %8s %12s %12s %12s %12s %10.1f\n", tau_width,
                  shortest_decimal(r["tau"].get<double>()).c_str(),
                  fmt4(r["density"], "%.3f").c_str(), fmt4(r["rel_l2_vs_baseline"]).c_str(),
                  fmt4(r["cosine_vs_baseline"], "%.6f").c_str(), fmt4(r["rel_l2_vs_exact"]).c_str(),
                  fmt4(r["cosine_vs_exact"], "%.6f").c_str(), r["ms"].get<double>());
    o << line;
  }
  for (const auto& r : s.json["stored"]) {
    std::snprintf(line, sizeof line, "%8s %8s %12s %12s %12s %12s %10s  %s\n", "stored", "-",
                  fmt4(r["rel_l2_vs_baseline"]).c_str(), "-", fmt4(r["rel_l2_vs_exact"]).c_str(), "-", "-",
                  r["name"].get<std::string>().c_str());
    o << line;
  }
  return o.str();
}

std::string sweep_markdown(const SweepResult& s) {
  if (!s.run) throw InputError("a Markdown or HTML report of a sweep needs a gate (it shows verdicts)");
  std::ostringstream o;
  o << "## touchstone sweep `" << s.fixture << "`\n\n";
  for (const auto& l : preface(s)) o << "- " << l << "\n";
  o << "\n" << render_markdown(*s.run) << "\n### Block: per-stage chain\n\n";
  if (s.block) o << render_markdown(s.block->run);
  else o << s.block_note << "\n";
  return o.str();
}

std::string sweep_html(const SweepResult& s) {
  if (!s.run) throw InputError("a Markdown or HTML report of a sweep needs a gate (it shows verdicts)");
  std::vector<std::string> notes = preface(s);
  std::vector<const GateRun*> runs = {&*s.run};
  if (s.block) runs.push_back(&s.block->run);
  else notes.push_back(s.block_note);
  return render_html(runs, "touchstone sweep " + s.fixture, notes);
}

}  // namespace ts
