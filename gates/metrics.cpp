#include "gates/metrics.hpp"

#include "core/phase.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>

#include "core/error.hpp"
#include "gates/metric_sums.hpp"

namespace ts {
using metric_detail::kChunk;
using metric_detail::Sums;

MetricSet metric_detail::Sums::finish() const {
  MetricSet m;
  m.count = n;
  m.nonfinite = nonfinite_a;
  m.nonfinite_ref = nonfinite_b;
  m.ulp_max = ulp_max;
  if (n == 0) return m;
  const double dn = static_cast<double>(n);
  // Undefined (not divided) when the reference has no norm; a NaN sum
  // fails `> 0` and so also leaves the figure undefined rather than NaN
  // when b is non-finite; a non-finite `a` propagates NaN/Inf into it.
  if (b2 > 0) m.rel_l2 = std::sqrt(d2) / std::sqrt(b2);
  // Cosine is undefined for a candidate of no norm, but a NaN norm is a NaN candidate, whose
  // cosine must read NaN (`a2 > 0` alone left it undefined: a report's "missing", not NaN).
  if (b2 > 0 && (a2 > 0 || std::isnan(a2))) m.cosine = ab / (std::sqrt(a2) * std::sqrt(b2));
  if (b2 > 0) m.gain = ab / b2;
  if (absb > 0) m.rel_l1 = absd / absb;
  m.rmse = std::sqrt(d2 / dn);
  m.max_abs = max_absd;
  m.mean_abs = absd / dn;
  m.zero_fraction = static_cast<double>(zeros_a) / dn;
  m.zero_fraction_ref = static_cast<double>(zeros_b) / dn;
  m.identical_fraction = static_cast<double>(identical) / dn;
  return m;
}

namespace {

void check_same_shape(TensorRef a, TensorRef b) {
  if (a.shape() != b.shape())
    throw InputError("metrics: candidate shape " + a.shape_string() + " differs from reference " +
                     b.shape_string());
  if (!a.sized() || !b.sized()) throw InternalError("metrics: tensor data size disagrees with its shape");
}

nlohmann::json num(double v) { return figure_json(v); }
nlohmann::json opt(const std::optional<double>& v) { return figure_json(v); }

}  // namespace

nlohmann::json figure_json(const std::optional<double>& v) {
  if (!v) return nullptr;
  if (std::isfinite(*v)) return *v;
  return std::isnan(*v) ? "NaN" : (*v > 0 ? "Infinity" : "-Infinity");
}

std::optional<double> figure_of(const nlohmann::json& j) {
  if (j.is_number()) return j.get<double>();
  if (j == "NaN") return std::numeric_limits<double>::quiet_NaN();
  if (j == "Infinity") return std::numeric_limits<double>::infinity();
  if (j == "-Infinity") return -std::numeric_limits<double>::infinity();
  return std::nullopt;
}

double ulp_distance(double x, double y, DType storage) {
  return metric_detail::any_ulp_distance(x, y, storage);
}

std::optional<double> MetricSet::get(const std::string& name) const {
  auto m = metric_map(*this);
  auto it = m.find(name);
  if (it == m.end() || name == "nonfinite_ref" || name == "zero_fraction_ref" || name == kStorageFigure ||
      name == kStorageRefFigure)
    throw InputError("unknown metric '" + name + "'");
  return it->second;
}

std::map<std::string, std::optional<double>> metric_map(const MetricSet& m) {
  return {{"rel_l2", m.rel_l2},
          {"cosine", m.cosine},
          {"rel_l1", m.rel_l1},
          {"rmse", m.count ? std::optional<double>(m.rmse) : std::nullopt},
          {"max_abs", m.count ? std::optional<double>(m.max_abs) : std::nullopt},
          {"mean_abs", m.count ? std::optional<double>(m.mean_abs) : std::nullopt},
          {"nonfinite", static_cast<double>(m.nonfinite)},
          {"zero_fraction", m.count ? std::optional<double>(m.zero_fraction) : std::nullopt},
          {"ulp_max", m.ulp_max},
          {"identical_fraction", m.count ? std::optional<double>(m.identical_fraction) : std::nullopt},
          {"gain", m.gain},
          {"nonfinite_ref", static_cast<double>(m.nonfinite_ref)},
          {"zero_fraction_ref", m.count ? std::optional<double>(m.zero_fraction_ref) : std::nullopt},
          {kStorageFigure, static_cast<double>(static_cast<int>(m.storage))},
          {kStorageRefFigure, static_cast<double>(static_cast<int>(m.storage_ref))}};
}

const std::vector<std::string>& metric_names() {
  static const std::vector<std::string> names = {"rel_l2",   "cosine",    "rel_l1",
                                                 "rmse",     "max_abs",   "mean_abs",
                                                 "nonfinite", "zero_fraction", "ulp_max",
                                                 "identical_fraction", "gain"};
  return names;
}

const std::vector<std::string>& breakdown_metric_names() {
  static const std::vector<std::string> names = {"rel_l2_worst_head", "rel_l2_worst_qblock",
                                                 "rel_l2_worst_frame", "gain_error_worst_head"};
  return names;
}

const std::vector<std::string>& gate_metric_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n = metric_names();
    for (const auto& b : breakdown_metric_names()) n.push_back(b);
    return n;
  }();
  return names;
}

nlohmann::json MetricSet::to_json() const {
  nlohmann::json j;
  j["count"] = count;
  j["rel_l2"] = opt(rel_l2);
  j["cosine"] = opt(cosine);
  j["rel_l1"] = opt(rel_l1);
  j["rmse"] = num(rmse);
  j["max_abs"] = num(max_abs);
  j["mean_abs"] = num(mean_abs);
  j["nonfinite"] = nonfinite;
  j["nonfinite_ref"] = nonfinite_ref;
  j["zero_fraction"] = num(zero_fraction);
  j["zero_fraction_ref"] = num(zero_fraction_ref);
  j["ulp_max"] = num(ulp_max);
  j["identical_fraction"] = num(identical_fraction);
  if (const std::string note = ulp_note(); !note.empty()) {
    j["ulp_storage"] = dtype_name(ulp_at);
    j["ulp_note"] = note;
  }
  j["gain"] = opt(gain);
  return j;
}

DType ulp_storage(DType a, DType b) {
  const auto significand = [](DType t) {
    switch (t) {
      case DType::bf16: return 8;
      case DType::f16: return 11;
      case DType::f32: return 24;
      case DType::f64: return 53;
      default: return 0;  // integer codes: one unit is 1 whatever the width
    }
  };
  if (significand(a) == 0) return a;
  if (significand(b) == 0) return b;
  return significand(a) <= significand(b) ? a : b;
}

void MetricSet::set_storage(DType a, DType b) {
  storage = a;
  storage_ref = b;
  ulp_at = ulp_storage(a, b);
}

std::string MetricSet::ulp_note() const {
  if (storage == storage_ref) return "";
  return std::string("ulp_max and identical_fraction counted at ") + dtype_name(ulp_at) +
         " after rounding both sides (the candidate " + dtype_name(storage) + ", the reference " +
         dtype_name(storage_ref) + ") to it";
}

MetricSet compute_metrics(TensorRef a, TensorRef b) {
  MetricSet m = compute_metrics(a, b, ulp_storage(a.dtype(), b.dtype()));
  m.set_storage(a.dtype(), b.dtype());
  return m;
}

MetricSet compute_metrics(TensorRef a, TensorRef b, DType storage) {
  check_same_shape(a, b);
  const Phase phase("metric pass (overall)");
  const int64_t n = a.numel();
  std::vector<Sums> part(static_cast<size_t>((n + kChunk - 1) / kChunk));
  metric_detail::chunk_sums(a, b, n, storage, part.data());
  Sums total;
  for (const Sums& p : part) total.merge(p);
  return total.finish();
}

std::pair<MetricSet, MetricSet> compute_metrics_pair(TensorRef a, TensorRef b, TensorRef c) {
  check_same_shape(a, b);
  check_same_shape(a, c);
  const Phase phase("metric pass (overall, against two references)");
  const int64_t n = a.numel();
  const size_t count = static_cast<size_t>((n + kChunk - 1) / kChunk);
  std::vector<Sums> part_b(count), part_c(count);
  metric_detail::chunk_sums_pair(a, b, c, n, ulp_storage(a.dtype(), b.dtype()), ulp_storage(a.dtype(), c.dtype()),
                                 part_b.data(), part_c.data());
  Sums total_b, total_c;
  for (const Sums& p : part_b) total_b.merge(p);
  for (const Sums& p : part_c) total_c.merge(p);
  std::pair<MetricSet, MetricSet> out{total_b.finish(), total_c.finish()};
  out.first.set_storage(a.dtype(), b.dtype());
  out.second.set_storage(a.dtype(), c.dtype());
  return out;
}

MetricBreakdown compute_breakdown(TensorRef a, TensorRef b, const BlockConfig& config) {
  check_same_shape(a, b);
  if (a.rank() != 3)
    throw InputError("metrics: breakdown needs an [S, H, D] tensor, got " + a.shape_string());
  const int64_t S = a.dim(0), H = a.dim(1), D = a.dim(2);
  const int64_t frames = config.grid_t;
  constexpr int64_t kBlock = metric_detail::kQueryBlock;
  const int64_t blocks = (S + kBlock - 1) / kBlock;
  const DType storage = ulp_storage(a.dtype(), b.dtype());
  const size_t slots = static_cast<size_t>(frames + 1);
  const Phase phase("metric pass (heads, frames, query blocks)");

  // Per query block: the sums of each head and of each frame (slot frames =
  // conditioning), each in index order; merged in block order afterwards, so
  // the figures do not depend on the thread count. The overall stretches come
  // from the same pass where they fit in query blocks.
  std::vector<Sums> head_acc(static_cast<size_t>(blocks * H)), frame_acc(static_cast<size_t>(blocks) * slots);
  std::vector<int64_t> frame_of(static_cast<size_t>(S));
  for (int64_t s = 0; s < S; ++s) {
    const int64_t f = config.frame_of_token(s);
    frame_of[static_cast<size_t>(s)] = (f < 0 || f >= frames) ? frames : f;
  }
  const int64_t n = a.numel();
  std::vector<Sums> chunks(static_cast<size_t>((n + kChunk - 1) / kChunk));
  const bool fused = metric_detail::breakdown_covers_chunks(H, D);
  metric_detail::breakdown_sums(a, b, S, H, D, frame_of.data(), frames, storage, head_acc.data(),
                                frame_acc.data(), fused ? chunks.data() : nullptr);
  if (!fused) metric_detail::chunk_sums(a, b, n, storage, chunks.data());
  MetricBreakdown out;
  out.tokens = S;
  Sums total;
  for (const Sums& p : chunks) total.merge(p);
  out.overall = total.finish();
  out.overall.set_storage(a.dtype(), b.dtype());
  std::vector<Sums> per_head(static_cast<size_t>(H)), per_frame(slots);
  for (int64_t blk = 0; blk < blocks; ++blk) {
    Sums block_total;
    for (int64_t h = 0; h < H; ++h) {
      const Sums& x = head_acc[static_cast<size_t>(blk * H + h)];
      block_total.merge(x);
      per_head[static_cast<size_t>(h)].merge(x);
    }
    out.per_query_block.push_back(block_total.finish());
    for (size_t f = 0; f < slots; ++f) per_frame[f].merge(frame_acc[static_cast<size_t>(blk) * slots + f]);
  }
  for (const Sums& x : per_head) out.per_head.push_back(x.finish());
  for (int64_t f = 0; f < frames; ++f) out.per_frame.push_back(per_frame[static_cast<size_t>(f)].finish());
  if (per_frame[static_cast<size_t>(frames)].n > 0) out.cond = per_frame[static_cast<size_t>(frames)].finish();
  for (auto* v : {&out.per_head, &out.per_query_block, &out.per_frame})
    for (MetricSet& m : *v) m.set_storage(a.dtype(), b.dtype());
  if (out.cond) out.cond->set_storage(a.dtype(), b.dtype());
  return out;
}

nlohmann::json MetricBreakdown::to_json() const {
  nlohmann::json j;
  j["overall"] = overall.to_json();
  auto list = [](const std::vector<MetricSet>& v) {
    nlohmann::json arr = nlohmann::json::array();
    for (const auto& m : v) arr.push_back(m.to_json());
    return arr;
  };
  j["per_head"] = list(per_head);
  j["per_query_block"] = list(per_query_block);
  j["query_block_tokens"] = 128;
  j["per_frame"] = list(per_frame);
  j["cond"] = cond ? cond->to_json() : nlohmann::json();
  return j;
}

nlohmann::json MetricBreakdown::worst(size_t n, const std::string& metric) const {
  // Higher is worse except for cosine; undefined figures sort last.
  const bool higher_better = metric == "cosine";
  auto pick = [&](const std::vector<MetricSet>& v) {
    std::vector<std::pair<size_t, std::optional<double>>> rows;
    for (size_t i = 0; i < v.size(); ++i) rows.emplace_back(i, v[i].get(metric));
    std::stable_sort(rows.begin(), rows.end(), [&](const auto& x, const auto& y) {
      if (!x.second || !y.second) return x.second.has_value() && !y.second.has_value();
      const double xv = std::isnan(*x.second) ? std::numeric_limits<double>::infinity() : *x.second;
      const double yv = std::isnan(*y.second) ? std::numeric_limits<double>::infinity() : *y.second;
      return higher_better ? xv < yv : xv > yv;
    });
    nlohmann::json arr = nlohmann::json::array();
    for (size_t i = 0; i < rows.size() && i < n; ++i)
      arr.push_back({{"index", rows[i].first}, {"value", opt(rows[i].second)}});
    return arr;
  };
  nlohmann::json j;
  j["metric"] = metric;
  j["per_head"] = pick(per_head);
  j["per_query_block"] = pick(per_query_block);
  j["per_frame"] = pick(per_frame);
  if (cond) j["cond"] = opt(cond->get(metric));
  return j;
}

namespace {

// The largest figure over groups: NaN if any is NaN, undefined if none is defined.
std::optional<double> worst_of(const std::vector<std::optional<double>>& figures) {
  std::optional<double> w;
  for (const auto& f : figures) {
    if (!f) continue;
    if (std::isnan(*f)) return *f;
    if (!w || *f > *w) w = *f;
  }
  return w;
}

std::vector<std::optional<double>> rel_l2_of(const std::vector<MetricSet>& groups) {
  std::vector<std::optional<double>> v;
  for (const auto& g : groups) v.push_back(g.rel_l2);
  return v;
}

}  // namespace

std::map<std::string, std::optional<double>> metric_map(const MetricBreakdown& b) {
  auto m = metric_map(b.overall);
  m["rel_l2_worst_head"] = worst_of(rel_l2_of(b.per_head));
  m["rel_l2_worst_qblock"] = worst_of(rel_l2_of(b.per_query_block));
  std::vector<MetricSet> frames = b.per_frame;
  if (b.cond) frames.push_back(*b.cond);
  m["rel_l2_worst_frame"] = worst_of(rel_l2_of(frames));
  std::vector<std::optional<double>> gain_errors;
  for (const auto& h : b.per_head)
    gain_errors.push_back(h.gain ? std::optional<double>(std::fabs(*h.gain - 1.0)) : std::nullopt);
  m["gain_error_worst_head"] = worst_of(gain_errors);
  return m;
}

namespace {

// Index of the group worst_of() picks: the first NaN, else the first largest.
std::optional<size_t> wg_worst_index(const std::vector<std::optional<double>>& figures) {
  std::optional<size_t> w;
  for (size_t i = 0; i < figures.size(); ++i) {
    const auto& f = figures[i];
    if (!f) continue;
    if (std::isnan(*f)) return i;
    if (!w || *f > *figures[*w]) w = i;
  }
  return w;
}

WorstGroup wg_group_of(const std::string& kind, int64_t index, const MetricSet& m) {
  WorstGroup g;
  g.kind = kind;
  g.index = index;
  g.rel_l2 = m.rel_l2;
  g.gain = m.gain;
  return g;
}

std::string wg_fmt(const std::optional<double>& v, int digits) {
  if (!v) return "undefined";
  if (std::isnan(*v)) return "NaN";
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.*g", digits, *v);
  return buf;
}

}  // namespace

std::map<std::string, WorstGroup> worst_group_map(const MetricBreakdown& b) {
  std::map<std::string, WorstGroup> out;
  if (auto i = wg_worst_index(rel_l2_of(b.per_head))) out["rel_l2_worst_head"] = wg_group_of("head", int64_t(*i), b.per_head[*i]);
  if (auto i = wg_worst_index(rel_l2_of(b.per_query_block))) {
    WorstGroup g = wg_group_of("query block", int64_t(*i), b.per_query_block[*i]);
    g.first_token = int64_t(*i) * 128;
    g.last_token = std::min(b.tokens, g.first_token + 128) - 1;
    out["rel_l2_worst_qblock"] = g;
  }
  std::vector<MetricSet> frames = b.per_frame;
  if (b.cond) frames.push_back(*b.cond);
  if (auto i = wg_worst_index(rel_l2_of(frames))) {
    const bool cond = b.cond && *i == b.per_frame.size();
    out["rel_l2_worst_frame"] = wg_group_of(cond ? "cond" : "frame", cond ? -1 : int64_t(*i), frames[*i]);
  }
  std::vector<std::optional<double>> gain_errors;
  for (const auto& h : b.per_head)
    gain_errors.push_back(h.gain ? std::optional<double>(std::fabs(*h.gain - 1.0)) : std::nullopt);
  if (auto i = wg_worst_index(gain_errors)) out["gain_error_worst_head"] = wg_group_of("head", int64_t(*i), b.per_head[*i]);
  return out;
}

std::string WorstGroup::text(bool gain_rule) const {
  std::string s = kind == "cond" ? "worst group: the conditioning tokens" : "worst " + kind + " " + std::to_string(index);
  if (first_token >= 0) s += " (tokens " + std::to_string(first_token) + ".." + std::to_string(last_token) + ")";
  if (gain_rule) return s + ", gain " + wg_fmt(gain, 4);
  return s + ", rel_l2 " + wg_fmt(rel_l2, 4) + ", gain " + wg_fmt(gain, 4);
}

nlohmann::json WorstGroup::to_json() const {
  nlohmann::json j{{"kind", kind}, {"index", index}, {"rel_l2", opt(rel_l2)}, {"gain", opt(gain)}};
  if (first_token >= 0) j["tokens"] = {first_token, last_token};
  return j;
}

}  // namespace ts
