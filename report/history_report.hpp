#pragma once
// What `touchstone history` prints: the series as a table, as JSON, or as a page of trend plots
// (docs/history.md "Reading the history").
#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>
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

// What the text and the page both say of a change, so that they say the same:
// its size in percent, two decimals, or the significant digits that show it is no zero
// ("-1.2e-05 %"); "from 0" where the level before was 0.
std::string change_percent(const std::optional<double>& relative);
// "before -> after", each with 6 significant digits, more where 6 would print them alike.
std::string change_levels(double before, double after);
// The digits (6 at least) at which every change of the series shows in its records' figures.
int figure_digits(const Series& s);
// "REGRESSION", "improvement", or for a worsening under the view's --min-change "worse, not a
// regression (under --min-change 2.00 %)": counts_as_regression's word, not the direction's.
std::string change_kind(const HistoryView& v, const Change& c);

}  // namespace ts::history
