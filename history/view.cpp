#include "history/view.hpp"

#include "history/series.hpp"

namespace ts::history {

std::vector<const Series*> regressions(const HistoryView& v) {
  std::vector<const Series*> r;
  if (!v.check_regressions) return r;
  for (const Series& s : v.series)
    if (latest_change_regresses(s, v.min_change)) r.push_back(&s);
  return r;
}

}  // namespace ts::history
