#pragma once
// What `touchstone history` prints: the series as a table, as JSON, or as a page of trend plots
// (docs/history.md "Reading the history").
#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>

#include "history/view.hpp"

namespace ts::history {

nlohmann::json history_json(const HistoryView& v);
// Every line at most `width` columns (long ones wrapped, nothing cut): each series headed by its
// rule and metric, then the candidate, the fixture's short identity and the gate.
std::string history_text(const HistoryView& v, size_t width);
// A self-contained page: one SVG trend plot per series, its bound drawn, points coloured by
// the case's verdict, the detected levels and changes marked.
std::string trend_html(const HistoryView& v);

}  // namespace ts::history
