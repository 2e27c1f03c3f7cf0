#pragma once
// Renderings of a gate run (gates/README.md "Reports"): a terminal table, JSON
// (everything), JUnit XML (one test case per candidate x rule), a
// Markdown summary for CI job pages and a self-contained HTML page with
// inline SVG plots for triage.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "gates/metrics.hpp"
#include "gates/verdict.hpp"

namespace ts {

// A candidate's outcomes by rule id (built-in checks left out), so that a
// table of many rules renders in linear time.
class RuleOutcomes {
 public:
  explicit RuleOutcomes(const CandidateVerdict& c) {
    for (const auto& o : c.outcomes)
      if (!o.builtin) by_id_.emplace(o.id, &o);
  }
  const RuleOutcome* find(const std::string& id) const {
    const auto it = by_id_.find(id);
    return it == by_id_.end() ? nullptr : it->second;
  }

 private:
  std::map<std::string, const RuleOutcome*> by_id_;
};

// The candidate's value of GateRun::columns[i] ("-" when it has none).
inline const std::string& shown_value(const CandidateVerdict& c, size_t i) {
  static const std::string none = "-";
  return i < c.shown.size() ? c.shown[i] : none;
}

// The terminal report fits `width` columns: one row per candidate while that
// table fits, else each candidate in a block of its own (a gate of many rules);
// long lines are wrapped, repro lines with a shell continuation. Without a
// width: terminal_width().
std::string render_terminal(const GateRun& run);
std::string render_terminal(const GateRun& run, int width);
// COLUMNS when it holds a positive number, else the width of the terminal on
// stdout, else kDefaultTerminalWidth (a pipe, a file, a CI log); never less
// than kMinTerminalWidth.
// `text` broken at spaces into lines of at most `width` columns, continuation
// lines indented by `indent` (the terminal report's wrapping, for the other
// lines a command prints around it).
// With `shell`, broken lines end in a backslash (a command that still pastes).
std::string wrap_for_terminal(const std::string& text, int width, int indent = 4, bool shell = false);
// Each line of `text` wrapped as above, its continuations indented 4 past the line's own
// leading spaces (listings: fixture inspect, tables).
std::string wrap_each_line(const std::string& text, int width);
inline constexpr int kDefaultTerminalWidth = 100;
inline constexpr int kMinTerminalWidth = 40;
int terminal_width();
std::string render_json(const GateRun& run);
std::string render_junit(const GateRun& run);
std::string render_markdown(const GateRun& run);
// One HTML5 file, no scripts or external resources: verdict badges, the
// rules table per candidate, each rule's figures against its bound.
std::string render_html(const GateRun& run);
// Several runs on one page (a sweep's attention table and its block's stage chain), each as
// render_html shows it alone, under `title` and the lines of `notes`.
std::string render_html(const std::vector<const GateRun*>& runs, const std::string& title,
                        const std::vector<std::string>& notes);

// What `touchstone compare F A B --html` shows: plain figures, so that gates/
// stays free of fixtures.
struct CompareReport {
  std::string fixture;
  std::string a_name, a_dataset, a_dtype;  // the candidate
  std::string b_name, b_dataset, b_dtype;  // the reference
  std::string shape;
  MetricSet metrics;
  std::optional<MetricBreakdown> breakdown;
  std::string breakdown_note;  // why there is no breakdown, when there is none
  // The noise floor: a third tensor (the baseline) against the same reference,
  // group by group, drawn under each group's point.
  std::optional<MetricBreakdown> floor;
  std::string floor_name;
};
// The metrics table and, with a breakdown, rel_l2 and |gain - 1| by head, by
// 128-token query block and by latent frame, each group a point, the floor's
// figure of each group beside it.
std::string render_compare_html(const CompareReport& report);

// A page of its own (triage, scan, history) in the reports' style: the same
// stylesheet (every svg_plot.hpp class), head and footer around `body_html`.
std::string render_page(const std::string& title, const std::string& body_html);

// Writes to a temporary file beside `path` and renames it over `path`, so a
// failed write never leaves a truncated report. InputError naming the path.
void write_file_atomic(const std::string& path, const std::string& content);

}  // namespace ts
