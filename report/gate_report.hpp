#pragma once
// Renderings of a gate run (gates/README.md "Reports"): a terminal table, JSON
// (everything), JUnit XML (one test case per candidate x rule), a
// Markdown summary for CI job pages and a self-contained HTML page with
// inline SVG plots for triage; and compare's page. The writers of every
// other report (sweep, scan, chain, triage, batch, history) build on these.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "gates/metrics.hpp"
#include "gates/verdict.hpp"
#include "report/page.hpp"
#include "report/terminal.hpp"

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
// width: terminal_width() (report/terminal.hpp).
// What a report says of a candidate's failing, open and missing rules, in rule order: one line each,
// except that the rules a NaN failed (NaN never passes) are named together in one line when
// finite_guard reports the count itself, so a NaN is said once, not once a rule.
struct ExplainedRule {
  std::string ids, status, message;
};
std::vector<ExplainedRule> explained_rules(const CandidateVerdict& c);
// The reason a report that lists every rule (JUnit's test cases, the HTML rules table) gives for
// one: its message, except for a rule a NaN failed while finite_guard counts the non-finite
// values itself, which points to finite_guard (explained_rules' grouping: said once).
std::string rule_reason(const CandidateVerdict& c, const RuleOutcome& o);

std::string render_terminal(const GateRun& run);
std::string render_terminal(const GateRun& run, int width);
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

// What `touchstone compare F A B --html` shows: plain figures, so that the
// page needs no fixture.
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

}  // namespace ts
