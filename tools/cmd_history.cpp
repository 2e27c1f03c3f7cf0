// touchstone history DB: the recorded runs of a results store (--record DB on gate and sweep) as
// series per candidate x fixture x gate x metric, with the changes found in each
// (docs/history.md); --regressions makes it a CI check.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <iostream>
#include <memory>
#include <regex>
#include <set>

#include "core/error.hpp"
#include "core/suggest.hpp"
#include "gates/metrics.hpp"
#include "history/store.hpp"
#include "report/history_report.hpp"
#include "report/terminal.hpp"
#include "tools/command.hpp"

namespace cmd_history {

struct Opts {
  std::string db;
  ts::history::Filters f;
  ts::cli::ReportTarget json, html;
  bool regressions = false, since_last_accept = false;
  double min_change = ts::history::kDefaultMinChange;
};

std::string normalized_since(std::string s) {
  if (s.empty()) return s;
  if (s.size() > 10 && s[10] == ' ') s[10] = 'T';
  static const std::regex iso(R"(\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d{1,3})?)?Z?)?)");
  const auto bad = [&s] {
    return ts::InputError("--since '" + s + "': expected a UTC date or time, e.g. 2026-12-01 or 2026-12-01T08:00:00");
  };
  if (!std::regex_match(s, iso)) throw bad();
  // The form alone would take 2026-13-45 or 25:00, and match nothing recorded.
  const auto num = [&s](size_t at, size_t n) { return std::stoi(s.substr(at, n)); };
  const std::chrono::year_month_day day{std::chrono::year(num(0, 4)), std::chrono::month(num(5, 2)),
                                        std::chrono::day(num(8, 2))};
  if (!day.ok()) throw bad();
  if (s.size() >= 16 && (num(11, 2) > 23 || num(14, 2) > 59 || (s.size() >= 19 && num(17, 2) > 59))) throw bad();
  if (s.back() == 'Z') s.pop_back();
  return s;
}

// A --metric nothing could ever match filtered every series away, and --regressions then
// passed: a typo is bad input. Known: any gate metric, and any rule id or metric recorded.
void check_metric(const ts::history::Store& store, const std::string& metric) {
  std::vector<std::string> known = ts::gate_metric_names();
  known.push_back("speedup");
  std::set<std::string> recorded;
  for (const auto& fig : ts::history::load_figures(store, {})) {
    recorded.insert(fig.metric);
    recorded.insert(fig.rule_id);
  }
  if (recorded.count(metric) || std::find(known.begin(), known.end(), metric) != known.end()) return;
  std::vector<std::string> ids;
  for (const auto& r : recorded)
    if (std::find(known.begin(), known.end(), r) == known.end()) ids.push_back(r);
  std::vector<std::string> all = known;
  all.insert(all.end(), ids.begin(), ids.end());
  throw ts::InputError("--metric '" + metric + "': no such metric or rule id (" + ts::did_you_mean(metric, all) +
                       "metrics: " + ts::join_names(known) +
                       (ids.empty() ? std::string("; no rule of another id is recorded")
                                    : "; rule ids recorded: " + ts::join_names(ids)) + ")");
}

// --gate matches a gate's name exactly, so a typo filtered every series away as --metric did:
// a name no recorded run was judged by is bad input, naming the ones that were.
void check_gate(const ts::history::Store& store, const std::string& gate) {
  const std::vector<std::string> known = ts::history::recorded_gates(store);
  if (std::find(known.begin(), known.end(), gate) != known.end()) return;
  throw ts::InputError("--gate '" + gate + "': no recorded run was judged by a gate of that name (" +
                       ts::did_you_mean(gate, known) +
                       (known.empty() ? std::string("the store holds no run") : "gates recorded: " + ts::join_names(known)) +
                       ")");
}

int run(const Opts& o) {
  if (!(o.min_change >= 0) || !std::isfinite(o.min_change))
    throw ts::InputError("--min-change must be a finite fraction >= 0 (0.02 = 2 %)");
  if (o.json.to_stdout() && o.html.to_stdout()) throw ts::InputError("at most one of --json/--html may go to stdout (-)");
  ts::history::Filters f = o.f;
  f.since = normalized_since(f.since);
  const ts::history::Store store = ts::history::Store::open_for_read(o.db);
  ts::history::HistoryView v;
  v.store = o.db;
  v.schema_version = store.schema_version();
  v.filters = f;
  if (!f.gate.empty()) check_gate(store, f.gate);
  if (!f.metric.empty()) check_metric(store, f.metric);
  v.series = ts::history::build_series(ts::history::load_figures(store, f));
  const ts::history::StoredIds ids = ts::history::stored_ids(store);
  std::vector<std::string> digits;
  for (const auto& id : ids.fixtures) digits.push_back(ts::history::identity_digits(id));
  v.short_fixtures = ts::history::ShortIds(digits);
  v.short_commits = ts::history::ShortIds(ids.commits);
  v.since_last_accept = o.since_last_accept;
  v.min_change = o.min_change;
  v.check_regressions = o.regressions;
  if (o.json.on()) o.json.emit(ts::history::history_json(v).dump(2) + "\n");
  if (o.html.on()) o.html.emit(ts::history::trend_html(v));
  if (!o.json.to_stdout() && !o.html.to_stdout()) std::cout << ts::history::history_text(v, static_cast<size_t>(ts::terminal_width())) << std::flush;
  return o.regressions && !ts::history::regressions(v).empty() ? ts::kGateFailed : ts::kPass;
}

ts::cli::Registration reg{
    "history",
    "The runs recorded in a results store (gate/sweep --record DB) as series per candidate x fixture x gate x "
    "metric, with the changes detected in each; --regressions exits 1 when the latest change of a series is a "
    "regression. Exit 0, 1 regression (with --regressions), 2 bad input",
    [](CLI::App& app) -> ts::cli::Action {
      auto o = std::make_shared<Opts>();
      app.add_option("db", o->db, "results store (SQLite) written by --record")->required();
      app.add_option("--kernel,-k", o->f.kernel, "only candidates whose spec contains this text");
      app.add_option("--fixture,-f", o->f.fixture, "only fixtures whose identity or path contains this text");
      app.add_option("--gate,-g", o->f.gate, "only this gate (its name, e.g. sparse_acceptance)");
      app.add_option("--metric,-m", o->f.metric, "only rules of this metric or id (rel_l2, speedup, sage_like)");
      app.add_option("--since", o->f.since, "only runs recorded at or after this UTC date or time (2026-12-01)");
      app.add_flag("--regressions", o->regressions,
                   "exit 1 when the latest change of any series is a regression (error up, speed down) of at "
                   "least --min-change");
      app.add_option("--min-change", o->min_change,
                     "the smallest relative worsening that is a regression (0.02 = 2 %): in the series, their "
                     "changes and --regressions alike")
          ->capture_default_str();
      app.add_flag("--since-last-accept", o->since_last_accept,
                   "per series: the last ACCEPTed record, the latest, and the changes between them");
      ts::cli::add_json_option(app, o->json, "the series, their points, segments and changes");
      ts::cli::add_report_option(app, "--html", o->html,
                                 "write a self-contained page of trend plots (one per series; the bound drawn, "
                                 "points coloured by verdict)");
      ts::cli::set_example(app, "touchstone history ci.db --kernel sol --metric rel_l2 --regressions --html trend.html");
      return [o] { return run(*o); };
    }};

}  // namespace cmd_history
