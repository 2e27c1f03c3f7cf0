#include "gates/metrics.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>

#include "core/error.hpp"

namespace ts {
namespace {

// Partial sums of one fixed stretch of elements. Stretches are combined in
// index order, so every figure is identical at any thread count.
struct Acc {
  int64_t n = 0;
  double d2 = 0, a2 = 0, b2 = 0, ab = 0, absd = 0, absb = 0, max_absd = 0;
  int64_t nonfinite_a = 0, nonfinite_b = 0, zeros_a = 0, zeros_b = 0, identical = 0;
  double ulp_max = 0;

  void add(double x, double y, DType storage) {
    ++n;
    if (!std::isfinite(x)) ++nonfinite_a;
    if (!std::isfinite(y)) ++nonfinite_b;
    if (x == 0.0) ++zeros_a;
    if (y == 0.0) ++zeros_b;
    const double d = x - y;
    d2 += d * d;
    a2 += x * x;
    b2 += y * y;
    ab += x * y;
    absd += std::fabs(d);
    absb += std::fabs(y);
    // NaN must not hide in a max: a NaN difference makes the max NaN.
    const double ad = std::fabs(d);
    if (std::isnan(ad) || ad > max_absd) max_absd = ad;
    const double u = ulp_distance(x, y, storage);
    if (u > ulp_max) ulp_max = u;
    if (u == 0.0) ++identical;
  }

  void merge(const Acc& o) {
    n += o.n;
    d2 += o.d2;
    a2 += o.a2;
    b2 += o.b2;
    ab += o.ab;
    absd += o.absd;
    absb += o.absb;
    if (std::isnan(o.max_absd) || o.max_absd > max_absd) max_absd = o.max_absd;
    nonfinite_a += o.nonfinite_a;
    nonfinite_b += o.nonfinite_b;
    zeros_a += o.zeros_a;
    zeros_b += o.zeros_b;
    if (o.ulp_max > ulp_max) ulp_max = o.ulp_max;
    identical += o.identical;
  }

  MetricSet finish() const {
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
    if (b2 > 0 && a2 > 0) m.cosine = ab / (std::sqrt(a2) * std::sqrt(b2));
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
};

constexpr int64_t kChunk = 1 << 14;

int64_t ordered16(uint16_t bits) {
  const int64_t mag = bits & 0x7fff;
  return (bits & 0x8000) ? -mag : mag;
}

// x rounded to nearest (ties to even) in a binary format of `mant` stored
// significand bits and `ebits` exponent bits, as its bit pattern; beyond the
// largest finite value it is infinity. (float16: 10, 5; bfloat16: 7, 8.)
uint32_t ieee_bits(double x, int mant, int ebits) {
  const int bias = (1 << (ebits - 1)) - 1;
  const uint32_t sign = std::signbit(x) ? 1u << (mant + ebits) : 0u;
  const uint32_t inf = ((1u << ebits) - 1) << mant;
  const double ax = std::fabs(x);
  if (ax == 0.0) return sign;
  if (std::isinf(ax)) return sign | inf;
  int e = 0;
  std::frexp(ax, &e);  // ax = m * 2^e, m in [0.5, 1)
  int E = e - 1;
  if (E < 1 - bias) {  // subnormal: a multiple of 2^(1 - bias - mant); the top one rounds up to the smallest normal
    const double k = std::nearbyint(std::ldexp(ax, mant + bias - 1));
    return sign | static_cast<uint32_t>(k);
  }
  const double one = std::ldexp(1.0, mant);
  double m = std::nearbyint(std::ldexp(ax, mant - E)) - one;
  if (m >= one) {
    m = 0;
    ++E;
  }
  if (E > bias) return sign | inf;
  return sign | (static_cast<uint32_t>(E + bias) << mant) | static_cast<uint32_t>(m);
}

uint16_t f16_bits(double x) { return static_cast<uint16_t>(ieee_bits(x, 10, 5)); }
uint16_t bf16_bits(double x) { return static_cast<uint16_t>(ieee_bits(x, 7, 8)); }

uint32_t f32_bits(double x) {
  const float f = static_cast<float>(x);
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

double ordered_distance32(uint32_t x, uint32_t y) {
  auto ord = [](uint32_t b) -> int64_t {
    const int64_t mag = b & 0x7fffffffu;
    return (b & 0x80000000u) ? -mag : mag;
  };
  return std::fabs(static_cast<double>(ord(x) - ord(y)));
}

void check_same_shape(const Tensor& a, const Tensor& b) {
  if (a.shape != b.shape)
    throw InputError("metrics: candidate shape " + a.shape_string() + " differs from reference " +
                     b.shape_string());
  if (static_cast<int64_t>(a.data.size()) != a.numel() ||
      static_cast<int64_t>(b.data.size()) != b.numel())
    throw InternalError("metrics: tensor data size disagrees with its shape");
}

nlohmann::json num(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
  return v;
}

nlohmann::json opt(const std::optional<double>& v) { return v ? num(*v) : nlohmann::json(); }

}  // namespace

double ulp_distance(double x, double y, DType storage) {
  if (!std::isfinite(x) || !std::isfinite(y)) {
    if (std::isinf(x) && x == y) return 0.0;
    return std::numeric_limits<double>::infinity();
  }
  switch (storage) {
    case DType::bf16:
      return std::fabs(static_cast<double>(ordered16(bf16_bits(x)) - ordered16(bf16_bits(y))));
    case DType::f16:
      return std::fabs(static_cast<double>(ordered16(f16_bits(x)) - ordered16(f16_bits(y))));
    case DType::f32:
      return ordered_distance32(f32_bits(x), f32_bits(y));
    case DType::f64: {
      uint64_t ux, uy;
      std::memcpy(&ux, &x, sizeof ux);
      std::memcpy(&uy, &y, sizeof uy);
      const uint64_t mx = ux & 0x7fffffffffffffffull, my = uy & 0x7fffffffffffffffull;
      const bool nx = (ux >> 63) != 0 && mx != 0, ny = (uy >> 63) != 0 && my != 0;
      if (nx == ny) return static_cast<double>(mx > my ? mx - my : my - mx);
      return static_cast<double>(mx) + static_cast<double>(my);
    }
    default:
      return std::fabs(x - y);  // integer storage: one unit is 1
  }
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

MetricSet compute_metrics(const Tensor& a, const Tensor& b) {
  MetricSet m = compute_metrics(a, b, ulp_storage(a.dtype, b.dtype));
  m.set_storage(a.dtype, b.dtype);
  return m;
}

MetricSet compute_metrics(const Tensor& a, const Tensor& b, DType storage) {
  check_same_shape(a, b);
  const int64_t n = a.numel();
  const int64_t chunks = (n + kChunk - 1) / kChunk;
  std::vector<Acc> part(static_cast<size_t>(chunks));
  const double* pa = a.ptr();
  const double* pb = b.ptr();
#pragma omp parallel for schedule(static)
  for (int64_t c = 0; c < chunks; ++c) {
    Acc& acc = part[static_cast<size_t>(c)];
    const int64_t end = std::min(n, (c + 1) * kChunk);
    for (int64_t i = c * kChunk; i < end; ++i) acc.add(pa[i], pb[i], storage);
  }
  Acc total;
  for (const Acc& p : part) total.merge(p);
  return total.finish();
}

MetricBreakdown compute_breakdown(const Tensor& a, const Tensor& b, const BlockConfig& config) {
  check_same_shape(a, b);
  if (a.rank() != 3)
    throw InputError("metrics: breakdown needs an [S, H, D] tensor, got " + a.shape_string());
  const int64_t S = a.dim(0), H = a.dim(1), D = a.dim(2);
  const int64_t frames = config.grid_t;
  constexpr int64_t kBlock = 128;
  const int64_t blocks = (S + kBlock - 1) / kBlock;
  const DType storage = ulp_storage(a.dtype, b.dtype);

  // Per query block: one accumulator per head and one per frame (index
  // frames = conditioning). Blocks run in parallel; everything is merged in
  // block order afterwards, so the figures do not depend on the thread count.
  std::vector<std::vector<Acc>> head_acc(static_cast<size_t>(blocks),
                                         std::vector<Acc>(static_cast<size_t>(H)));
  std::vector<std::vector<Acc>> frame_acc(static_cast<size_t>(blocks),
                                          std::vector<Acc>(static_cast<size_t>(frames + 1)));
  const double* pa = a.ptr();
  const double* pb = b.ptr();
  std::vector<int64_t> frame_of(static_cast<size_t>(S));
  for (int64_t s = 0; s < S; ++s) {
    const int64_t f = config.frame_of_token(s);
    frame_of[static_cast<size_t>(s)] = (f < 0 || f >= frames) ? frames : f;
  }
#pragma omp parallel for schedule(static)
  for (int64_t blk = 0; blk < blocks; ++blk) {
    const int64_t end = std::min(S, (blk + 1) * kBlock);
    for (int64_t s = blk * kBlock; s < end; ++s) {
      Acc& fa = frame_acc[static_cast<size_t>(blk)][static_cast<size_t>(frame_of[static_cast<size_t>(s)])];
      for (int64_t h = 0; h < H; ++h) {
        Acc& ha = head_acc[static_cast<size_t>(blk)][static_cast<size_t>(h)];
        const int64_t base = (s * H + h) * D;
        for (int64_t d = 0; d < D; ++d) {
          ha.add(pa[base + d], pb[base + d], storage);
          fa.add(pa[base + d], pb[base + d], storage);
        }
      }
    }
  }
  MetricBreakdown out;
  out.tokens = S;
  out.overall = compute_metrics(a, b, storage);
  out.overall.set_storage(a.dtype, b.dtype);
  std::vector<Acc> per_head(static_cast<size_t>(H)), per_frame(static_cast<size_t>(frames + 1));
  for (int64_t blk = 0; blk < blocks; ++blk) {
    Acc block_total;
    for (int64_t h = 0; h < H; ++h) {
      const Acc& x = head_acc[static_cast<size_t>(blk)][static_cast<size_t>(h)];
      block_total.merge(x);
      per_head[static_cast<size_t>(h)].merge(x);
    }
    out.per_query_block.push_back(block_total.finish());
    for (int64_t f = 0; f <= frames; ++f)
      per_frame[static_cast<size_t>(f)].merge(frame_acc[static_cast<size_t>(blk)][static_cast<size_t>(f)]);
  }
  for (const Acc& x : per_head) out.per_head.push_back(x.finish());
  for (int64_t f = 0; f < frames; ++f) out.per_frame.push_back(per_frame[static_cast<size_t>(f)].finish());
  if (per_frame[static_cast<size_t>(frames)].n > 0) out.cond = per_frame[static_cast<size_t>(frames)].finish();
  for (auto* v : {&out.per_head, &out.per_query_block, &out.per_frame})
    for (MetricSet& m : *v) m.set_storage(a.dtype, b.dtype);
  if (out.cond) out.cond->set_storage(a.dtype, b.dtype);
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
