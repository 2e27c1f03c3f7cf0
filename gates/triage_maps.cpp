#include "gates/triage_maps.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <queue>

#include "core/error.hpp"

namespace ts {
namespace {

nlohmann::json tm_num(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
  return v;
}
nlohmann::json tm_opt(const std::optional<double>& v) { return v ? tm_num(*v) : nlohmann::json(); }

void tm_check3(const Tensor& a, const Tensor& b, const char* what) {
  if (a.rank() != 3 || a.shape != b.shape)
    throw InputError(std::string("triage: ") + what + " needs two [S, H, D] tensors of one shape, got " +
                     a.shape_string() + " and " + b.shape_string());
}

nlohmann::json tm_place_json(const BlockConfig& c, int64_t s) {
  const TokenPlace p = token_place(c, s);
  nlohmann::json j{{"segment", p.segment}};
  if (p.video) j.update({{"t", p.t}, {"h", p.h}, {"w", p.w}});
  return j;
}

struct TmCell {
  double d2 = 0, b2 = 0, ab = 0;
  int64_t n = 0;
  void add(double x, double y) {
    const double d = x - y;
    d2 += d * d;
    b2 += y * y;
    ab += x * y;
    ++n;
  }
};

ErrorMap tm_finish(std::string name, std::string ra, std::string ca, std::vector<std::string> rows,
                std::vector<std::string> cols, const std::vector<TmCell>& cells) {
  ErrorMap m{std::move(name), std::move(ra), std::move(ca), std::move(rows), std::move(cols), {}, {}, {}};
  for (const TmCell& c : cells) {
    m.count.push_back(c.n);
    // A NaN sum (non-finite candidate) fails b2 > 0 only when b is bad; a
    // NaN d2 propagates so that the cell ranks worst.
    m.rel_l2.push_back(c.n && c.b2 > 0 ? std::optional<double>(std::sqrt(c.d2 / c.b2)) : std::nullopt);
    m.gain.push_back(c.n && c.b2 > 0 ? std::optional<double>(c.ab / c.b2) : std::nullopt);
  }
  return m;
}

// snprintf, not a chain of string +: GCC 12 warns falsely (-Wstringop-overflow) on long chains.
template <typename... A>
std::string tm_label(const char* f, A... a) {
  char b[96];
  std::snprintf(b, sizeof b, f, static_cast<long long>(a)...);
  return b;
}

double tm_rank_key(const std::optional<double>& v) {
  if (!v) return -1;
  return std::isnan(*v) ? HUGE_VAL : *v;
}

}  // namespace

TokenPlace token_place(const BlockConfig& c, int64_t s) {
  TokenPlace p;
  int64_t offset = 0;
  for (const auto& seg : c.segments) {
    if (s >= seg.start && s < seg.end()) {
      p.segment = seg.name;
      if (!seg.video) return p;
      p.video = true;
      const int64_t v = offset + (s - seg.start);
      const int64_t gh = std::max<int64_t>(1, c.grid_h), gw = std::max<int64_t>(1, c.grid_w);
      if (c.token_order.rfind("tile:", 0) == 0) {
        int tt = 1, th = 1, tw = 1;
        if (std::sscanf(c.token_order.c_str(), "tile:%dx%dx%d", &tt, &th, &tw) != 3 || tt <= 0 || th <= 0 || tw <= 0)
          throw InputError("token_order '" + c.token_order + "' is not tile:TTxTHxTW");
        const int64_t tile = int64_t(tt) * th * tw, tiles_h = (gh + th - 1) / th, tiles_w = (gw + tw - 1) / tw;
        const int64_t ti = v / tile, local = v % tile;
        const int64_t tile_t = ti / (tiles_h * tiles_w), rem = ti % (tiles_h * tiles_w);
        p.t = std::min(c.grid_t - 1, tile_t * tt + local / (int64_t(th) * tw));
        p.h = std::min(gh - 1, (rem / tiles_w) * th + (local % (int64_t(th) * tw)) / tw);
        p.w = std::min(gw - 1, (rem % tiles_w) * tw + local % tw);
      } else {
        p.t = std::min(c.grid_t - 1, v / (gh * gw));
        p.h = (v % (gh * gw)) / gw;
        p.w = v % gw;
      }
      return p;
    }
    if (seg.video) offset += seg.length;
  }
  p.segment = "?";
  return p;
}

nlohmann::json worst_elements(const Tensor& cand, const Tensor& exact, const Tensor* baseline,
                              const BlockConfig& config, size_t n) {
  tm_check3(cand, exact, "worst elements");
  const int64_t H = cand.dim(1), D = cand.dim(2), N = cand.numel();
  // Min-heap of the n largest |error| (ties: the lower index stays).
  using E = std::pair<double, int64_t>;
  auto worse = [](const E& a, const E& b) { return a.first > b.first || (a.first == b.first && a.second < b.second); };
  std::priority_queue<E, std::vector<E>, decltype(worse)> heap(worse);
  for (int64_t i = 0; i < N; ++i) {
    const double e = std::fabs(cand.data[i] - exact.data[i]);
    if (!std::isfinite(e)) continue;
    if (heap.size() < n) heap.push({e, i});
    else if (worse({e, i}, heap.top())) {
      heap.pop();
      heap.push({e, i});
    }
  }
  std::vector<E> v;
  while (!heap.empty()) {
    v.push_back(heap.top());
    heap.pop();
  }
  std::sort(v.begin(), v.end(), worse);
  nlohmann::json out = nlohmann::json::array();
  for (const auto& [e, i] : v) {
    const int64_t s = i / (H * D), h = (i / D) % H, d = i % D;
    nlohmann::json j{{"token", s}, {"head", h}, {"channel", d}, {"abs_error", e},
                     {"candidate", tm_num(cand.data[i])}, {"exact", tm_num(exact.data[i])}};
    if (baseline) j["baseline"] = tm_num(baseline->data[i]);
    j.update(tm_place_json(config, s));
    out.push_back(j);
  }
  return out;
}

nlohmann::json nonfinite_runs(const Tensor& cand, const BlockConfig& config, size_t list) {
  if (cand.rank() != 3) throw InputError("triage: non-finite runs need an [S, H, D] tensor");
  const int64_t S = cand.dim(0), H = cand.dim(1), D = cand.dim(2);
  nlohmann::json runs = nlohmann::json::array(), first = nlohmann::json::array();
  int64_t total = 0;
  for (int64_t h = 0; h < H; ++h) {
    int64_t start = -1, elems = 0;
    std::vector<int64_t> chans;
    auto close = [&](int64_t last) {
      nlohmann::json r{{"head", h}, {"tokens", {start, last}}, {"elements", elems}, {"channels", chans}};
      r["first"] = tm_place_json(config, start);
      runs.push_back(r);
      start = -1;
      elems = 0;
      chans.clear();
    };
    for (int64_t s = 0; s < S; ++s) {
      int64_t here = 0;
      for (int64_t d = 0; d < D; ++d) {
        const double x = cand.data[(s * H + h) * D + d];
        if (std::isfinite(x)) continue;
        ++here;
        if (chans.size() < 8 && std::find(chans.begin(), chans.end(), d) == chans.end()) chans.push_back(d);
        if (first.size() < list) {
          nlohmann::json j{{"token", s}, {"head", h}, {"channel", d}, {"candidate", tm_num(x)}};
          j.update(tm_place_json(config, s));
          first.push_back(j);
        }
      }
      if (here) {
        if (start < 0) start = s;
        elems += here;
        total += here;
      } else if (start >= 0) {
        close(s - 1);
      }
    }
    if (start >= 0) close(S - 1);
  }
  return {{"count", total}, {"runs", runs}, {"positions", first}};
}

nlohmann::json ErrorMap::to_json() const {
  nlohmann::json r = nlohmann::json::array(), g = nlohmann::json::array();
  for (size_t i = 0; i < rows.size(); ++i) {
    nlohmann::json rr = nlohmann::json::array(), gg = nlohmann::json::array();
    for (size_t k = 0; k < cols.size(); ++k) {
      rr.push_back(tm_opt(rel_l2[i * cols.size() + k]));
      gg.push_back(tm_opt(gain[i * cols.size() + k]));
    }
    r.push_back(rr);
    g.push_back(gg);
  }
  return {{"name", name}, {"row_axis", row_axis}, {"col_axis", col_axis}, {"rows", rows}, {"cols", cols},
          {"rel_l2", r}, {"gain", g}};
}

std::vector<ErrorMap> error_maps(const Tensor& cand, const Tensor& ref, const BlockConfig& c, int64_t qb) {
  tm_check3(cand, ref, "maps");
  const int64_t S = cand.dim(0), H = cand.dim(1), D = cand.dim(2);
  const int64_t QB = (S + qb - 1) / qb, F = std::max<int64_t>(0, c.grid_t);
  const int64_t gh = std::max<int64_t>(1, c.grid_h), gw = std::max<int64_t>(1, c.grid_w);
  const int64_t th = (gh + 7) / 8, tw = (gw + 7) / 8, TH = (gh + th - 1) / th, TW = (gw + tw - 1) / tw;
  std::vector<TmCell> hq(size_t(H * QB)), hf(size_t(H * (F + 1))), ft(size_t(std::max<int64_t>(F, 1) * TH * TW));
  bool any_cond = false;
  for (int64_t s = 0; s < S; ++s) {
    const TokenPlace p = token_place(c, s);
    const int64_t f = p.video && p.t >= 0 && p.t < F ? p.t : F;
    if (f == F) any_cond = true;
    const int64_t tile = p.video && f < F ? (f * TH + p.h / th) * TW + p.w / tw : -1;
    for (int64_t h = 0; h < H; ++h) {
      TmCell& a = hq[size_t(h * QB + s / qb)];
      TmCell& b = hf[size_t(h * (F + 1) + f)];
      const double* x = cand.ptr() + (s * H + h) * D;
      const double* y = ref.ptr() + (s * H + h) * D;
      for (int64_t d = 0; d < D; ++d) {
        a.add(x[d], y[d]);
        b.add(x[d], y[d]);
        if (tile >= 0) ft[size_t(tile)].add(x[d], y[d]);
      }
    }
  }
  std::vector<std::string> heads, blocks, frames, tiles, frame_rows;
  for (int64_t h = 0; h < H; ++h) heads.push_back("head " + std::to_string(h));
  for (int64_t i = 0; i < QB; ++i)
    blocks.push_back(tm_label("qblock %lld (%lld..%lld)", i, i * qb, std::min(S, (i + 1) * qb) - 1));
  for (int64_t f = 0; f < F; ++f) frames.push_back("frame " + std::to_string(f));
  frame_rows = frames;
  std::vector<TmCell> hf_used;
  if (any_cond) {
    frames.push_back("cond");
    hf_used = hf;
  } else {
    for (int64_t h = 0; h < H; ++h)
      for (int64_t f = 0; f < F; ++f) hf_used.push_back(hf[size_t(h * (F + 1) + f)]);
  }
  for (int64_t a = 0; a < TH; ++a)
    for (int64_t b = 0; b < TW; ++b)
      tiles.push_back(tm_label("h%lld-%lld w%lld-%lld", a * th, std::min(gh, (a + 1) * th) - 1, b * tw,
                               std::min(gw, (b + 1) * tw) - 1));
  std::vector<ErrorMap> out;
  out.push_back(tm_finish("head_x_qblock", "head", "query block (" + std::to_string(qb) + " tokens)", heads, blocks, hq));
  out.push_back(tm_finish("head_x_frame", "head", any_cond ? "latent frame, then the conditioning tokens (cond)" : "latent frame",
                          heads, frames, hf_used));
  if (F > 0) {
    ft.resize(size_t(F * TH * TW));
    out.push_back(tm_finish("frame_x_tile", "latent frame",
                         "spatial tile (" + std::to_string(th) + " x " + std::to_string(tw) + " latent positions)",
                         frame_rows, tiles, ft));
  }
  return out;
}

nlohmann::json rank_cells(const std::vector<ErrorMap>& maps, const std::vector<ErrorMap>* floor, size_t n) {
  nlohmann::json out = nlohmann::json::object();
  for (size_t m = 0; m < maps.size(); ++m) {
    const ErrorMap& e = maps[m];
    const ErrorMap* fl = floor && m < floor->size() && (*floor)[m].rel_l2.size() == e.rel_l2.size() ? &(*floor)[m] : nullptr;
    const size_t cells = e.rel_l2.size(), C = e.cols.size();
    auto ratio = [&](size_t i) -> std::optional<double> {
      if (!fl || !e.rel_l2[i] || !fl->rel_l2[i] || !(*fl->rel_l2[i] > 0)) return std::nullopt;
      return *e.rel_l2[i] / *fl->rel_l2[i];
    };
    std::vector<size_t> idx(cells);
    for (size_t i = 0; i < cells; ++i) idx[i] = i;
    auto key = [&](size_t i) {
      if (fl) {
        if (e.rel_l2[i] && std::isnan(*e.rel_l2[i])) return HUGE_VAL;
        const auto r = ratio(i);
        // A cell whose floor is 0 (the baseline exact there) ranks by its own figure, above ratios.
        if (!r && e.rel_l2[i] && *e.rel_l2[i] > 0) return 1e300;
        return r ? *r : -1.0;
      }
      return tm_rank_key(e.rel_l2[i]);
    };
    std::stable_sort(idx.begin(), idx.end(), [&](size_t a, size_t b) {
      const double ka = key(a), kb = key(b);
      if (ka != kb) return ka > kb;
      return tm_rank_key(e.rel_l2[a]) > tm_rank_key(e.rel_l2[b]);
    });
    auto cell_json = [&](size_t i) {
      nlohmann::json j{{"row", e.rows[i / C]}, {"col", e.cols[i % C]}, {"row_index", i / C}, {"col_index", i % C},
                       {"rel_l2", tm_opt(e.rel_l2[i])}, {"gain", tm_opt(e.gain[i])}};
      if (fl) {
        j["floor_rel_l2"] = tm_opt(fl->rel_l2[i]);
        j["ratio_to_floor"] = tm_opt(ratio(i));
      }
      return j;
    };
    nlohmann::json by_rel = nlohmann::json::array(), by_gain = nlohmann::json::array();
    for (size_t k = 0; k < std::min(n, cells); ++k) by_rel.push_back(cell_json(idx[k]));
    std::stable_sort(idx.begin(), idx.end(), [&](size_t a, size_t b) {
      auto ge = [&](size_t i) { return e.gain[i] ? (std::isnan(*e.gain[i]) ? HUGE_VAL : std::fabs(*e.gain[i] - 1)) : -1.0; };
      return ge(a) > ge(b);
    });
    for (size_t k = 0; k < std::min(n, cells); ++k) by_gain.push_back(cell_json(idx[k]));
    out[e.name] = {{"ranked_by", fl ? "rel_l2 / the baseline's rel_l2 in the same cell" : "rel_l2"},
                   {"worst", by_rel},
                   {"worst_gain", by_gain}};
  }
  return out;
}

namespace {

double tm_dot(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

std::vector<double> tm_diff(const Tensor& a, const Tensor& b) {
  if (a.shape != b.shape) throw InputError("triage: decomposition needs outputs of one shape, got " +
                                           a.shape_string() + " and " + b.shape_string());
  std::vector<double> d(a.data.size());
  for (size_t i = 0; i < d.size(); ++i) d[i] = a.data[i] - b.data[i];
  return d;
}

}  // namespace

nlohmann::json decompose_chain(const Tensor& exact, const ErrorChain& chain) {
  const double ne = std::sqrt(tm_dot(exact.data, exact.data));
  const std::vector<double> total = tm_diff(*chain.outputs.back(), exact);
  const double tt = tm_dot(total, total);
  std::vector<std::vector<double>> parts;
  const Tensor* prev = &exact;
  for (const Tensor* o : chain.outputs) {
    parts.push_back(tm_diff(*o, *prev));
    prev = o;
  }
  nlohmann::json j;
  j["rule"] = "e_total = sum of e_i exactly (telescoped: e_i = o_i - o_(i-1), o_0 = exact, o_n = candidate); "
              "||e_total||^2 = sum ||e_i||^2 + sum_(i<j) 2<e_i, e_j>; share_i = <e_i, e_total> / ||e_total||^2 sums to 1";
  j["total_rel_l2"] = ne > 0 ? tm_num(std::sqrt(tt) / ne) : nlohmann::json();
  nlohmann::json ps = nlohmann::json::array();
  std::vector<double> sum(total.size(), 0.0);
  double share_sum = 0;
  for (size_t i = 0; i < parts.size(); ++i) {
    for (size_t k = 0; k < sum.size(); ++k) sum[k] += parts[i][k];
    const double share = tt > 0 ? tm_dot(parts[i], total) / tt : 0;
    share_sum += share;
    ps.push_back({{"name", chain.names[i]},
                  {"rel_l2", ne > 0 ? tm_num(std::sqrt(tm_dot(parts[i], parts[i])) / ne) : nlohmann::json()},
                  {"share", tm_num(share)}});
  }
  j["parts"] = ps;
  nlohmann::json cross = nlohmann::json::array();
  double sq = 0;
  for (size_t i = 0; i < parts.size(); ++i) sq += tm_dot(parts[i], parts[i]);
  double cr = 0;
  for (size_t a = 0; a < parts.size(); ++a)
    for (size_t b = a + 1; b < parts.size(); ++b) {
      const double c = 2 * tm_dot(parts[a], parts[b]);
      cr += c;
      cross.push_back({{"a", chain.names[a]}, {"b", chain.names[b]}, {"value", ne > 0 ? tm_num(c / (ne * ne)) : nlohmann::json()}});
    }
  j["cross_terms"] = cross;  // in units of ||exact||^2
  const std::vector<double> res = [&] {
    std::vector<double> r(total.size());
    for (size_t k = 0; k < r.size(); ++k) r[k] = sum[k] - total[k];
    return r;
  }();
  j["identity"] = {{"sum_of_squares_plus_cross", ne > 0 ? tm_num((sq + cr) / (ne * ne)) : nlohmann::json()},
                   {"total_squared", ne > 0 ? tm_num(tt / (ne * ne)) : nlohmann::json()},
                   {"residual_rel", tt > 0 ? tm_num(std::sqrt(tm_dot(res, res) / tt)) : nlohmann::json(0.0)},
                   {"share_sum", tm_num(share_sum)}};
  return j;
}

nlohmann::json decompose_one_off(const Tensor& exact, const Tensor& full, const Tensor& floor,
                                 const std::vector<std::pair<std::string, const Tensor*>>& without) {
  const double ne = std::sqrt(tm_dot(exact.data, exact.data));
  const std::vector<double> ef = tm_diff(full, exact), e0 = tm_diff(floor, exact);
  const double ff = tm_dot(ef, ef);
  std::vector<double> inter(ef);
  for (size_t k = 0; k < inter.size(); ++k) inter[k] -= e0[k];
  auto rel = [&](const std::vector<double>& v) { return ne > 0 ? tm_num(std::sqrt(tm_dot(v, v)) / ne) : nlohmann::json(); };
  auto share = [&](const std::vector<double>& v) { return ff > 0 ? tm_num(tm_dot(v, ef) / ff) : nlohmann::json(); };
  nlohmann::json parts = nlohmann::json::array();
  for (const auto& [name, t] : without) {
    std::vector<double> c = tm_diff(full, *t);
    for (size_t k = 0; k < inter.size(); ++k) inter[k] -= c[k];
    const std::vector<double> ew = tm_diff(*t, exact);
    parts.push_back({{"name", name}, {"rel_l2", rel(c)}, {"share", share(c)}, {"rel_l2_without", rel(ew)}});
  }
  return {{"rule", "e_full = e_floor + sum_X c_X + interaction exactly, c_X = full - (full with X switched off), "
                   "e_floor = (every quantiser off) - exact; share = <part, e_full> / ||e_full||^2, the shares sum to 1"},
          {"full_rel_l2", rel(ef)},
          {"floor", {{"rel_l2", rel(e0)}, {"share", share(e0)}}},
          {"parts", parts},
          {"interaction", {{"rel_l2", rel(inter)}, {"share", share(inter)}}}};
}

std::vector<double> cell_norm_ratio(const Tensor& a, const Tensor& b, const Tensor& ref, int64_t qb) {
  tm_check3(a, b, "cell norms");
  const int64_t S = a.dim(0), H = a.dim(1), D = a.dim(2), QB = (S + qb - 1) / qb;
  std::vector<double> num2(size_t(H * QB), 0.0), den(size_t(H * QB), 0.0);
  for (int64_t s = 0; s < S; ++s)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t d = 0; d < D; ++d) {
        const int64_t i = (s * H + h) * D + d;
        const double x = a.data[i] - b.data[i];
        num2[size_t(h * QB + s / qb)] += x * x;
        den[size_t(h * QB + s / qb)] += ref.data[i] * ref.data[i];
      }
  for (size_t i = 0; i < num2.size(); ++i) num2[i] = den[i] > 0 ? std::sqrt(num2[i] / den[i]) : 0.0;
  return num2;
}

std::optional<double> pearson(const std::vector<double>& x, const std::vector<double>& y) {
  const size_t n = std::min(x.size(), y.size());
  if (n < 3) return std::nullopt;
  double mx = 0, my = 0;
  for (size_t i = 0; i < n; ++i) mx += x[i], my += y[i];
  mx /= double(n);
  my /= double(n);
  double sxy = 0, sxx = 0, syy = 0;
  for (size_t i = 0; i < n; ++i) {
    sxy += (x[i] - mx) * (y[i] - my);
    sxx += (x[i] - mx) * (x[i] - mx);
    syy += (y[i] - my) * (y[i] - my);
  }
  if (!(sxx > 0) || !(syy > 0)) return std::nullopt;
  return sxy / std::sqrt(sxx * syy);
}

}  // namespace ts
