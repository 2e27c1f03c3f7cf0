#pragma once
// What `touchstone history` shows: the series read from the store, filtered, with the view's
// options (docs/history.md "Reading the history"); report/history_report.hpp writes it.
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
  // The smallest worsening that is a regression (--min-change), in every part of the view.
  double min_change = kDefaultMinChange;
  bool check_regressions = false;  // --regressions: name the series whose latest change is one
  // The text's short fixture identities and commits, unique within the store (stored_ids()).
  ShortIds short_fixtures, short_commits;
};

// Series whose latest change is a regression (empty without check_regressions).
std::vector<const Series*> regressions(const HistoryView& v);

}  // namespace ts::history
