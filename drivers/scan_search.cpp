// The search of touchstone scan: a geometric grid, the trend as the median log-log slope of
// its steps, and bisection of the step that leaves the trend most. Each bisection step asks
// which end the midpoint resembles, after the trend is taken out, so a smooth rise of the
// error with length is never mistaken for the cliff.
#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include "core/error.hpp"
#include "drivers/scan.hpp"
#include "gates/gate_file.hpp"

namespace ts {

ScanDim parse_scan_dim(const std::string& name) {
  if (name == "seq") return ScanDim::seq;
  if (name == "heads") return ScanDim::heads;
  if (name == "head_dim") return ScanDim::head_dim;
  throw InputError("--dim " + name + ": expected seq, heads or head_dim");
}

const char* scan_dim_name(ScanDim d) {
  switch (d) {
    case ScanDim::seq: return "seq";
    case ScanDim::heads: return "heads";
    case ScanDim::head_dim: return "head_dim";
  }
  return "seq";
}

std::vector<ScanEvaluation> ScanSearchResult::sorted() const {
  auto s = evaluations;
  std::stable_sort(s.begin(), s.end(), [](const ScanEvaluation& a, const ScanEvaluation& b) { return a.x < b.x; });
  return s;
}

namespace {

bool broken(const ScanEvaluation& e) { return !e.figure || !std::isfinite(*e.figure); }

// log10 of the figure, at least the floor's (an exact 0 too), so that a kernel
// exact on part of the range still has a trend and roundoff is no cliff.
double log_level(const ScanEvaluation& e, double floor) { return std::log10(std::max(*e.figure, floor)); }

int64_t round_to(int64_t x, int64_t m) { return std::max<int64_t>(m, (x + m / 2) / m * m); }

}  // namespace

ScanSearchResult scan_search(const ScanSearchOptions& o, const ScanFunction& evaluate) {
  if (o.from < 1 || o.to <= o.from) throw InputError("scan: the range must be 1 <= --from < --to");
  if (o.multiple < 1) throw InputError("scan: --multiple must be >= 1");
  if (o.from % o.multiple || o.to % o.multiple)
    throw InputError("scan: --from and --to must be multiples of --multiple " + std::to_string(o.multiple));
  if (o.points < 4) throw InputError("scan: --points must be >= 4 (a trend needs three steps)");
  if (o.budget < o.points) throw InputError("scan: --budget must be >= --points");
  if (!(o.resolution > 0) || !(o.jump > 1) || !(o.floor > 0))
    throw InputError("scan: --resolution and --floor must be > 0, --jump > 1");

  ScanSearchResult r;
  auto eval = [&](int64_t x, bool grid) -> const ScanEvaluation& {
    ScanEvaluation e = evaluate(x);
    e.x = x;
    e.order = static_cast<int>(r.evaluations.size());
    e.grid = grid;
    r.evaluations.push_back(e);
    return r.evaluations.back();
  };

  std::set<int64_t> xs;
  const double l0 = std::log(static_cast<double>(o.from)), l1 = std::log(static_cast<double>(o.to));
  for (int i = 0; i < o.points; ++i) {
    const double x = std::exp(l0 + (l1 - l0) * i / (o.points - 1));
    xs.insert(std::clamp(round_to(static_cast<int64_t>(std::llround(x)), o.multiple), o.from, o.to));
  }
  std::vector<ScanEvaluation> g;
  for (int64_t x : xs) g.push_back(eval(x, true));

  auto lx = [](int64_t x) { return std::log10(static_cast<double>(x)); };
  auto level = [&](const ScanEvaluation& e) { return log_level(e, o.floor); };
  std::vector<double> slopes;
  for (size_t i = 0; i + 1 < g.size(); ++i)
    if (!broken(g[i]) && !broken(g[i + 1]))
      slopes.push_back((level(g[i + 1]) - level(g[i])) / (lx(g[i + 1].x) - lx(g[i].x)));
  if (!slopes.empty()) {
    std::sort(slopes.begin(), slopes.end());
    const size_t n = slopes.size();
    r.slope = n % 2 ? slopes[n / 2] : (slopes[n / 2 - 1] + slopes[n / 2]) / 2;
  }

  // Each step's departure from the trend (infinite across a broken run).
  const double limit = std::log10(o.jump);
  std::vector<std::pair<double, size_t>> off;
  for (size_t i = 0; i + 1 < g.size(); ++i) {
    double d;
    if (broken(g[i]) != broken(g[i + 1])) d = std::numeric_limits<double>::infinity();
    else if (broken(g[i])) continue;
    else d = std::fabs(level(g[i + 1]) - level(g[i]) - r.slope.value_or(0) * (lx(g[i + 1].x) - lx(g[i].x)));
    if (d > limit) off.push_back({d, i});
  }
  if (off.empty()) return r;
  std::stable_sort(off.begin(), off.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  for (size_t k = 1; k < off.size(); ++k) r.other_departures.push_back({g[off[k].second].x, g[off[k].second + 1].x});

  ScanEvaluation a = g[off[0].second], b = g[off[0].second + 1];
  auto done = [&] {
    const int64_t width = b.x - a.x;
    return width <= o.multiple ||
           static_cast<double>(width) <= o.resolution * static_cast<double>(a.x);
  };
  while (!done() && static_cast<int>(r.evaluations.size()) < o.budget) {
    // The geometric midpoint: the stop is relative to the shape, so each step
    // halves the interval's log ratio (a cliff at 1.01 k and one at 199 k cost
    // the same); rounded down to the multiple.
    const int64_t m = static_cast<int64_t>(std::sqrt(static_cast<double>(a.x) * static_cast<double>(b.x))) /
                      o.multiple * o.multiple;
    const int64_t mid = m <= a.x ? a.x + o.multiple : m;
    if (mid >= b.x) break;
    const ScanEvaluation e = eval(mid, false);
    bool like_a;
    if (broken(e) != broken(a) || broken(e) != broken(b)) {
      like_a = broken(e) == broken(a);
    } else {
      // Both ends finite: the end whose trend line passes nearer the midpoint.
      const double k = r.slope.value_or(0);
      const double pa = level(a) + k * (lx(mid) - lx(a.x)), pb = level(b) - k * (lx(b.x) - lx(mid));
      like_a = std::fabs(level(e) - pa) <= std::fabs(level(e) - pb);
    }
    (like_a ? a : b) = e;
  }

  ScanCliff c;
  c.below = a.x;
  c.above = b.x;
  c.figure_below = a.figure;
  c.figure_above = b.figure;
  c.located = done();
  auto fig = [](const ScanEvaluation& e) {
    return !e.error.empty() ? "failed (" + e.error + ")" : e.figure ? format_number(*e.figure) : "undefined";
  };
  c.text = std::string(c.located ? "cliff" : "cliff (not located to the resolution: the budget ran out)") +
           " between " + std::to_string(a.x) + " (" + fig(a) + ") and " + std::to_string(b.x) + " (" + fig(b) +
           ")";
  r.cliff = c;
  return r;
}

}  // namespace ts
