// The terminal table of `touchstone compare --stages` (drivers/stage_comparison.cpp compares).
#include "report/stage_report.hpp"

#include <cstdio>
#include <optional>
#include <sstream>

namespace ts {
namespace {

std::string fmt(std::optional<double> v) {
  if (!v) return "undef";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3e", *v);
  return buf;
}

}  // namespace

std::string render_stage_table(const StageComparison& c) {
  std::ostringstream o;
  char line[512];
  std::snprintf(line, sizeof line, "%s: stages of '%s' against '%s'%s (gate %s)\n", c.fixture.c_str(), c.a.c_str(),
                c.b.c_str(), c.exact.empty() ? "" : (", exact '" + c.exact + "'").c_str(), c.run.gate.source.c_str());
  o << line;
  std::snprintf(line, sizeof line, "%-10s %10s %12s %10s %8s  %-12s %s\n", "stage", "rel_l2", "cosine", "max_abs",
                "ulp_max", "status", "rules not passed");
  o << line;
  int judged = 0, bad = 0;
  for (const auto& r : c.rows) {
    if (!r.missing_in.empty()) {
      std::snprintf(line, sizeof line, "%-10s %10s %12s %10s %8s  %-12s absent in '%s'\n", r.stage.c_str(), "-", "-",
                    "-", "-", "skip", r.missing_in.c_str());
      o << line;
      continue;
    }
    std::string why;
    if (r.verdict) {
      ++judged;
      if (r.verdict->verdict != Verdict::accept) ++bad;
      for (const auto& oc : r.verdict->outcomes)
        if (oc.status == RuleStatus::fail || oc.status == RuleStatus::inconclusive ||
            (oc.status == RuleStatus::missing && !oc.optional))
          why += (why.empty() ? "" : "; ") + oc.id + ": " + oc.message;
    }
    char cos[32];
    if (r.metrics->cosine) std::snprintf(cos, sizeof cos, "%.9f", *r.metrics->cosine);
    else std::snprintf(cos, sizeof cos, "undef");
    // "–" is three bytes and one column: pad by hand.
    const std::string st = r.status();
    const std::string padded = st == "–" ? st + std::string(11, ' ') : st + std::string(st.size() < 12 ? 12 - st.size() : 0, ' ');
    std::snprintf(line, sizeof line, "%-10s %10s %12s %10s %8s  ", r.stage.c_str(), fmt(r.metrics->rel_l2).c_str(), cos,
                  fmt(r.metrics->max_abs).c_str(), fmt(r.metrics->ulp_max).c_str());
    o << line << padded << " " << why << "\n";
  }
  if (!c.first_failing.empty())
    o << "first stage over its bound: " << c.first_failing << " (" << bad << " of " << judged << " judged stages not passed)\n";
  else if (!c.first_inconclusive.empty())
    o << "INCONCLUSIVE: first stage not judged: " << c.first_inconclusive << " (" << bad << " of " << judged
      << " judged stages not passed)\n";
  else
    o << "every judged stage (" << judged << " of " << c.compared << " compared) is within its bounds\n";
  return o.str();
}

}  // namespace ts
