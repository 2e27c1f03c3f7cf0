#pragma once
// What `touchstone history` prints: the series as a table, as JSON, or as a page of trend plots
// (docs/history.md "Reading the history").
#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "history/series.hpp"
#include "history/short_ids.hpp"

namespace ts::history {

struct HistoryView {
  std::string store;
  int schema_version = 0;
  Filters filters;
  std::vector<Series> series;
  bool since_last_accept = false;   // the "moved since the last ACCEPT" view instead of the table
  std::optional<double> min_change;  // set: --regressions, with this size
  // The text's short fixture identities and commits, unique within the store (stored_ids()).
  ShortIds short_fixtures, short_commits;
};

// Series whose latest change regresses by at least view.min_change (empty without it).
std::vector<const Series*> regressions(const HistoryView& v);

nlohmann::json history_json(const HistoryView& v);
// Every line at most `width` columns (long ones wrapped, nothing cut): each series headed by its
// rule and metric, then the candidate, the fixture's short identity and the gate.
std::string history_text(const HistoryView& v, size_t width);
// A self-contained page: one SVG trend plot per series, its bound drawn, points coloured by
// the case's verdict, the detected levels and changes marked.
std::string trend_html(const HistoryView& v);

}  // namespace ts::history
