#include "reference/attention_sol.hpp"

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "core/error.hpp"
#include "core/progress.hpp"
#include "reference/numerics/convert.hpp"
#include "reference/numerics/detmath.hpp"
#include "reference/sage2_quant.hpp"
#include "reference/sol_lanes.hpp"

namespace ts {
namespace {

template <typename T>
using RowMat = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// Float32 mean of rows [start, start+n) of a [S][D] head, summed in token order.
void block_mean(const float* x, int64_t D, int64_t start, int64_t n, float* out) {
  std::fill(out, out + D, 0.0f);
  for (int64_t s = start; s < start + n; ++s)
    for (int64_t d = 0; d < D; ++d) out[d] += x[s * D + d];
  const float fn = static_cast<float>(n);
  for (int64_t d = 0; d < D; ++d) out[d] /= fn;
}

void quantize_v_int8_blocks(SolPrepared& pr) {
  const int64_t NB = static_cast<int64_t>(pr.blocks.size()), D = pr.D, S = pr.S;
  pr.v8.assign(static_cast<size_t>(pr.H * S * D), 0);
  pr.v8_scale.assign(static_cast<size_t>(pr.H * NB * D), 0.0f);
#pragma omp parallel for schedule(static)
  for (int64_t h = 0; h < pr.H; ++h) {
    const float* x = pr.v.head(h);
    for (int64_t b = 0; b < NB; ++b) {
      const SolKeyBlock& kb = pr.blocks[b];
      for (int64_t d = 0; d < D; ++d) {
        // per_warp-style recipe per (block, channel): amax from 1e-7, rni.sat.
        float amax = 1e-7f;
        for (int64_t s = kb.start; s < kb.start + kb.length; ++s)
          amax = std::max(amax, std::fabs(x[s * D + d]));
        const float mult = 127.0f / amax;
        pr.v8_scale[(h * NB + b) * D + d] = amax / 127.0f;
        for (int64_t s = kb.start; s < kb.start + kb.length; ++s)
          pr.v8[(h * S + s) * D + d] = num::int8_rni_sat(x[s * D + d] * mult);
      }
    }
  }
}

}  // namespace

SolPrepared sol_layout(const AttentionProblem& p, const SolConfig& c) {
  SolPrepared pr;
  pr.H = p.q.H;
  pr.S = p.q.S;
  pr.D = p.q.D;
  pr.QB = (pr.S + c.block_q - 1) / c.block_q;
  pr.segments = p.segments;
  pr.blocks = sol_key_blocks(p.segments, c.block_k);
  for (size_t b = 0; b < pr.blocks.size(); ++b)
    if (pr.blocks[b].video) pr.video_block_ids.push_back(static_cast<int64_t>(b));
  pr.VB = static_cast<int64_t>(pr.video_block_ids.size());
  return pr;
}

SolPrepared sol_prepare_inputs(const AttentionProblem& p, const SolConfig& c) {
  SolPrepared pr = sol_layout(p, c);
  pr.q = sage2::to_head_major(p.q, p.q_stored);
  pr.k = sage2::to_head_major(p.k, p.k_stored);
  pr.v = sage2::to_head_major(p.v, p.v_stored);
  const int64_t H = pr.H, D = pr.D, QB = pr.QB, VB = pr.VB;
  pr.kbar.assign(static_cast<size_t>(H * VB * D), 0.0f);
  pr.vbar.assign(static_cast<size_t>(H * VB * D), 0.0f);
  pr.r.assign(static_cast<size_t>(H * QB * VB), 0.0);

#pragma omp parallel for schedule(static)
  for (int64_t h = 0; h < H; ++h) {
    for (int64_t j = 0; j < VB; ++j) {
      const SolKeyBlock& kb = pr.blocks[pr.video_block_ids[j]];
      block_mean(pr.k.head(h), D, kb.start, kb.length, pr.kbar.data() + (h * VB + j) * D);
      block_mean(pr.v.head(h), D, kb.start, kb.length, pr.vbar.data() + (h * VB + j) * D);
    }
    std::vector<float> qbar(static_cast<size_t>(D));
    for (int64_t i = 0; i < QB; ++i) {
      const int64_t q0 = i * c.block_q, nq = std::min(c.block_q, pr.S - q0);
      block_mean(pr.q.head(h), D, q0, nq, qbar.data());
      // r_ij = q̄_i · k̄_j · softmax_scale from the float32 means, in float64.
      for (int64_t j = 0; j < VB; ++j) {
        const float* kb = pr.kbar.data() + (h * VB + j) * D;
        double dot = 0.0;
        for (int64_t d = 0; d < D; ++d) dot += static_cast<double>(qbar[d]) * kb[d];
        pr.r[(h * QB + i) * VB + j] = dot * p.softmax_scale;
      }
    }
  }

  if (c.precision != SolPrecision::bf16) {
    // Q/K as sage2's per_warp kernel over the whole packed sequence, K smoothed.
    pr.km = sage2::smoothing_mean(pr.k, p.input_dtype);
    const sage2::HeadMajor ks =
        sage2::subtract_mean(pr.k, pr.km, sage2::Granularity::per_warp, p.input_dtype);
    pr.q8 = sage2::quantize_int8(pr.q, {sage2::Granularity::per_warp, true, 128, 32});
    pr.k8 = sage2::quantize_int8(ks, {sage2::Granularity::per_warp, false, 64, 64});
  }
  if (c.precision == SolPrecision::int8_qk_pv) quantize_v_int8_blocks(pr);
  return pr;
}

void sol_route_all(SolPrepared& pr, const SolConfig& c) {
  const int64_t H = pr.H, QB = pr.QB, VB = pr.VB;
  pr.mask.assign(static_cast<size_t>(H * QB * VB), 0);
  if (VB == 0) return;
#pragma omp parallel for schedule(static)
  for (int64_t h = 0; h < H; ++h) {
    for (int64_t i = 0; i < QB; ++i) {
      const double* r = pr.r.data() + (h * QB + i) * VB;
      const std::vector<uint8_t> m = sol_route(std::vector<double>(r, r + VB), c);
      std::copy(m.begin(), m.end(), pr.mask.begin() + (h * QB + i) * VB);
    }
  }
}

SolPrepared sol_prepare(const AttentionProblem& p, const SolConfig& c) {
  SolPrepared pr = sol_prepare_inputs(p, c);
  sol_route_all(pr, c);
  return pr;
}

bool sol_same_inputs(const SolConfig& a, const SolConfig& b) {
  return a.block_q == b.block_q && a.block_k == b.block_k && a.precision == b.precision;
}

float sol_pseudo_key(const SolPrepared& pr, const SolConfig& c, int64_t h, int64_t j, int64_t d) {
  const float kb = pr.kbar[(h * pr.VB + j) * pr.D + d];
  return c.precision != SolPrecision::bf16 ? kb - pr.km[h * pr.D + d] : kb;
}

float sol_log_block_length(const SolPrepared& pr, int64_t j) {
  return static_cast<float>(detmath::log(static_cast<double>(pr.blocks[pr.video_block_ids[j]].length)));
}

namespace {

// The float32 products of the bf16 and int8_qk variants (the logits q·kᵀ, P·V), in index order:
// c[r][j] = sum over k in order of a[r][k] * b[k][j], from zero, as one sequential loop (and the
// CUDA mirror) sums it. A BLAS's order depends on its blocking, which Eigen sizes from the CPU's
// caches: the same fixture gave other bits on another machine. The inner loop runs over
// independent sums, so it vectorises without reordering any of them.
[[gnu::target_clones("avx2", "default")]] void product_in_order(const float* a, int64_t rows, int64_t inner,
                                                               const float* b, int64_t cols, float* c) {
  for (int64_t r = 0; r < rows; ++r) {
    float* o = c + r * cols;
    std::fill(o, o + cols, 0.0f);
    for (int64_t k = 0; k < inner; ++k) {
      const float ark = a[r * inner + k];
      const float* bk = b + k * cols;
      for (int64_t j = 0; j < cols; ++j) o[j] += ark * bk[j];
    }
  }
}

void attend_block(const SolPrepared& pr, const SolConfig& c, float scale, int64_t h, int64_t i,
                  Tensor& out) {
  const int64_t S = pr.S, D = pr.D, VB = pr.VB;
  const int64_t q0 = i * c.block_q, nr = std::min(c.block_q, S - q0);
  const uint8_t* mask = pr.mask.data() + (h * pr.QB + i) * VB;

  // Attended blocks (routed video, every conditioning block) in token order.
  std::vector<int64_t> att_blocks, unrouted;
  int64_t n = 0;
  for (size_t b = 0; b < pr.blocks.size(); ++b) {
    const SolKeyBlock& kb = pr.blocks[b];
    if (!kb.video || mask[kb.video_index]) {
      att_blocks.push_back(static_cast<int64_t>(b));
      n += kb.length;
    } else if (c.compensation) {
      unrouted.push_back(kb.video_index);
    }
  }
  const bool int8 = c.precision != SolPrecision::bf16;

  // Gather the attended keys (and values) into contiguous rows; bf16 keys channel-major too.
  RowMat<float> kg(n, D), vg(n, D);
  std::vector<float> kt(int8 ? 0 : static_cast<size_t>(n * D));
  std::vector<float> ks(static_cast<size_t>(n));
  {
    int64_t row = 0;
    for (int64_t b : att_blocks) {
      const SolKeyBlock& kb = pr.blocks[b];
      for (int64_t s = kb.start; s < kb.start + kb.length; ++s, ++row) {
        float* k = kg.data() + row * D;
        float* v = vg.data() + row * D;
        if (int8)
          std::copy(pr.k8.head(h) + s * D, pr.k8.head(h) + (s + 1) * D, k);
        else
          for (int64_t d = 0; d < D; ++d) kt[static_cast<size_t>(d * n + row)] = k[d] = pr.k.head(h)[s * D + d];
        if (c.precision == SolPrecision::int8_qk_pv)
          std::copy(pr.v8.data() + (h * S + s) * D, pr.v8.data() + (h * S + s + 1) * D, v);
        else
          std::copy(pr.v.head(h) + s * D, pr.v.head(h) + (s + 1) * D, v);
        if (int8) ks[row] = pr.k8.scale(h, s);
      }
    }
  }

  // Real-key logits. bf16: float32 dot products of the bf16 values times
  // f32(softmax_scale). int8: the exact int32 dot (float GEMM of codes, exact
  // for D <= 1024) times (q_scale * k_scale), then f32(softmax_scale).
  RowMat<float> sc(nr, n);
  if (int8) {
    const RowMat<float> qf =
        Eigen::Map<const RowMat<int8_t>>(pr.q8.head(h) + q0 * D, nr, D).cast<float>();
    sc.noalias() = qf * kg.transpose();
    for (int64_t r = 0; r < nr; ++r) {
      const float qs = pr.q8.scale(h, q0 + r);
      for (int64_t j = 0; j < n; ++j) sc(r, j) = (sc(r, j) * (qs * ks[j])) * scale;
    }
  } else {
    product_in_order(pr.q.head(h) + q0 * D, nr, D, kt.data(), n, sc.data());
    sc *= scale;
  }

  // Pseudo-key logits q · k̄_j · scale + ln(n_j); int8 variants use k̄_j − km,
  // the smoothing shift the real keys' logits carry. q is unquantised.
  const int64_t nu = static_cast<int64_t>(unrouted.size());
  RowMat<float> ps(nr, std::max<int64_t>(nu, 1));
  {
    std::vector<float> kc(static_cast<size_t>(D));
    for (int64_t u = 0; u < nu; ++u) {
      const int64_t j = unrouted[u];
      for (int64_t d = 0; d < D; ++d) kc[d] = sol_pseudo_key(pr, c, h, j, d);
      const float ln_n = sol_log_block_length(pr, j);
      for (int64_t r = 0; r < nr; ++r) {
        const float* q = pr.q.head(h) + (q0 + r) * D;
        float dot = 0.0f;
        for (int64_t d = 0; d < D; ++d) dot += q[d] * kc[d];
        ps(r, u) = dot * scale + ln_n;
      }
    }
  }

  // Softmax over real and pseudo keys together, float32; the denominator sums
  // the unrounded P, real keys in token order then pseudo-keys.
  std::vector<float> den(static_cast<size_t>(nr));
  for (int64_t r = 0; r < nr; ++r) {
    float m = -std::numeric_limits<float>::infinity();
    for (int64_t j = 0; j < n; ++j) m = std::max(m, sc(r, j));
    for (int64_t u = 0; u < nu; ++u) m = std::max(m, ps(r, u));
    const float l = sol_lanes::exp_and_sum(sc.data() + r * n, n, m, 0.0f);
    den[r] = sol_lanes::exp_and_sum(ps.data() + r * ps.cols(), nu, m, l);
  }

  RowMat<float> acc(nr, D);
  if (c.precision != SolPrecision::int8_qk_pv) {
    product_in_order(sc.data(), nr, n, vg.data(), D, acc.data());
  } else {
    // INT8 P·V per attended key block: P per (row, block) with scale
    // amax/127 (amax from 1e-7), rni.sat codes; V per (block, channel) the
    // same way; the exact int32 block sum (float GEMM of codes: |sum| <
    // 127^2 * 1024 < 2^24) is dequantised as (sum * p_scale) * v_scale and
    // added into the float32 output block by block in token order.
    acc.setZero();
    const int64_t NB = static_cast<int64_t>(pr.blocks.size());
    int64_t row0 = 0;
    RowMat<float> pc, dot;
    std::vector<float> pscale(static_cast<size_t>(nr));
    for (int64_t b : att_blocks) {
      const int64_t len = pr.blocks[b].length;
      pc.resize(nr, len);
      for (int64_t r = 0; r < nr; ++r) {
        float amax = 1e-7f;
        for (int64_t j = 0; j < len; ++j) amax = std::max(amax, sc(r, row0 + j));
        const float mult = 127.0f / amax;
        pscale[r] = amax / 127.0f;
        for (int64_t j = 0; j < len; ++j) pc(r, j) = num::int8_rni_sat(sc(r, row0 + j) * mult);
      }
      dot.noalias() = pc * vg.middleRows(row0, len);
      const float* vs = pr.v8_scale.data() + (h * NB + b) * D;
      for (int64_t r = 0; r < nr; ++r)
        for (int64_t d = 0; d < D; ++d) acc(r, d) += (dot(r, d) * pscale[r]) * vs[d];
      row0 += len;
    }
  }
  for (int64_t u = 0; u < nu; ++u) {
    const float* vb = pr.vbar.data() + (h * VB + unrouted[u]) * D;
    for (int64_t r = 0; r < nr; ++r)
      for (int64_t d = 0; d < D; ++d) acc(r, d) += ps(r, u) * vb[d];
  }
  for (int64_t r = 0; r < nr; ++r)
    for (int64_t d = 0; d < D; ++d) {
      const float o = acc(r, d) / den[r];
      out.data[((q0 + r) * pr.H + h) * D + d] = c.round_out ? num::bf16_round(o) : o;
    }
}

}  // namespace

const char* sol_precision_name(SolPrecision p) {
  switch (p) {
    case SolPrecision::bf16: return "bf16";
    case SolPrecision::int8_qk: return "int8_qk";
    case SolPrecision::int8_qk_pv: return "int8_qk_pv";
  }
  return "?";
}

const char* sol_selector_name(SolSelector s) {
  switch (s) {
    case SolSelector::zscore: return "zscore";
    case SolSelector::topk: return "topk";
    case SolSelector::cdf: return "cdf";
  }
  return "?";
}

std::vector<SolKeyBlock> sol_key_blocks(const std::vector<Segment>& segments, int64_t block_k) {
  if (block_k <= 0) throw InputError("sol: block_k must be positive");
  std::vector<SolKeyBlock> out;
  int64_t vidx = 0;
  for (const Segment& seg : segments)
    for (int64_t s = seg.start; s < seg.end(); s += block_k) {
      SolKeyBlock b;
      b.start = s;
      b.length = std::min(block_k, seg.end() - s);
      b.video = seg.video;
      b.video_index = seg.video ? vidx++ : -1;
      out.push_back(b);
    }
  return out;
}

std::vector<uint8_t> sol_route(const std::vector<double>& r, const SolConfig& c) {
  const size_t n = r.size();
  std::vector<uint8_t> m(n, 0);
  if (n == 0) return m;
  const size_t best = static_cast<size_t>(std::max_element(r.begin(), r.end()) - r.begin());
  // Blocks by descending r, ties by index.
  auto ranked = [&] {
    std::vector<size_t> idx(n);
    std::iota(idx.begin(), idx.end(), size_t{0});
    std::stable_sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return r[a] > r[b]; });
    return idx;
  };
  switch (c.selector) {
    case SolSelector::zscore: {
      if (c.tau <= -100.0) {
        std::fill(m.begin(), m.end(), 1);
        break;
      }
      double mean = 0.0;
      for (double x : r) mean += x;
      mean /= static_cast<double>(n);
      double var = 0.0;
      for (double x : r) var += (x - mean) * (x - mean);
      const double sd = std::sqrt(var / static_cast<double>(n));  // population std
      if (sd == 0.0) {
        std::fill(m.begin(), m.end(), 1);
        break;
      }
      for (size_t j = 0; j < n; ++j) m[j] = (r[j] - mean) / sd >= c.tau ? 1 : 0;
      break;
    }
    case SolSelector::topk: {
      const auto idx = ranked();
      size_t count = static_cast<size_t>(std::ceil(c.topk * static_cast<double>(n)));
      count = std::clamp<size_t>(count, 1, n);
      for (size_t t = 0; t < count; ++t) m[idx[t]] = 1;
      break;
    }
    case SolSelector::cdf: {
      // SpargeAttn's cdfthreshd: the smallest set of highest-r blocks whose
      // softmax(r) mass reaches the threshold.
      const auto idx = ranked();
      std::vector<double> e(n);
      double total = 0.0;
      for (size_t j = 0; j < n; ++j) total += (e[j] = detmath::exp(r[j] - r[best]));
      double cum = 0.0;
      for (size_t t = 0; t < n; ++t) {
        m[idx[t]] = 1;
        cum += e[idx[t]] / total;
        if (cum >= c.cdf) break;
      }
      break;
    }
  }
  m[best] = 1;
  return m;
}

void sol_check(const AttentionProblem& problem, const SolConfig& c) {
  problem.validate();
  if (c.block_q <= 0 || c.block_k <= 0 || c.block_k > kSolMaxBlockK)
    throw InputError("sol: block_q must be positive and block_k in [1, " + std::to_string(kSolMaxBlockK) + "]");
  if (c.precision != SolPrecision::bf16 && problem.q.D > 1024)
    throw InputError("sol: int8 precision needs head_dim <= 1024");
}

AttentionResult sol_attention(const AttentionProblem& problem, const SolConfig& c) {
  sol_check(problem, c);
  const SolPrepared pr = sol_prepare(problem, c);
  const int64_t S = pr.S, H = pr.H, D = pr.D, QB = pr.QB;
  const float scale = static_cast<float>(problem.softmax_scale);

  AttentionResult res;
  res.out = Tensor({S, H, D}, c.round_out ? DType::bf16 : DType::f32);
  Progress progress("sol emulation", H * QB);
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t t = 0; t < H * QB; ++t) {
    attend_block(pr, c, scale, t / QB, t % QB, res.out);
    progress.advance();
  }
  sol_finish(pr, c, res);
  return res;
}

void sol_finish(const SolPrepared& pr, const SolConfig& c, AttentionResult& res) {
  const int64_t H = pr.H, QB = pr.QB, VB = pr.VB;

  // Routed density: mean of the mask over [heads, query blocks, video blocks].
  nlohmann::json per_head = nlohmann::json::array();
  int64_t total = 0;
  for (int64_t h = 0; h < H; ++h) {
    int64_t routed = 0;
    for (int64_t i = 0; i < QB * VB; ++i) routed += pr.mask[h * QB * VB + i];
    total += routed;
    if (VB > 0)
      per_head.push_back(static_cast<double>(routed) / static_cast<double>(QB * VB));
    else
      per_head.push_back(nullptr);
  }
  res.stats["density"] = VB > 0 ? nlohmann::json(static_cast<double>(total) /
                                                  static_cast<double>(H * QB * VB))
                                : nlohmann::json(nullptr);
  res.stats["density_per_head"] = per_head;
  res.stats["video_blocks"] = VB;
  res.stats["query_blocks"] = QB;

  if (c.dump) {
    Tensor mask({H, QB, VB}, DType::u8), r({H, QB, VB}, DType::f64), vb({VB, 2}, DType::i64);
    for (size_t i = 0; i < pr.mask.size(); ++i) {
      mask.data[i] = pr.mask[i];
      r.data[i] = pr.r[i];
    }
    for (int64_t j = 0; j < VB; ++j) {
      const SolKeyBlock& b = pr.blocks[pr.video_block_ids[j]];
      vb.data[j * 2] = static_cast<double>(b.start);
      vb.data[j * 2 + 1] = static_cast<double>(b.length);
    }
    res.intermediates["route_mask"] = std::move(mask);
    res.intermediates["routing_r"] = std::move(r);
    res.intermediates["video_blocks"] = std::move(vb);
  }
  if (c.store_routing) res.datasets["routing"] = sol_routing_dataset(pr, c);
}

ResultDataset sol_routing_dataset(const SolPrepared& pr, const SolConfig& c) {
  ResultDataset d;
  d.tensor = Tensor({pr.H, pr.QB, pr.VB}, DType::u8);
  for (size_t i = 0; i < pr.mask.size(); ++i) d.tensor.data[i] = pr.mask[i];
  nlohmann::json segs = nlohmann::json::array();
  for (const Segment& s : pr.segments)
    segs.push_back({{"name", s.name}, {"kind", s.video ? "video" : "cond"}, {"start", s.start},
                    {"length", s.length}});
  std::vector<int64_t> starts, lengths;
  for (int64_t id : pr.video_block_ids) {
    starts.push_back(pr.blocks[id].start);
    lengths.push_back(pr.blocks[id].length);
  }
  d.attrs = {{"format", kSolRoutingFormat},
             {"block_q", c.block_q},
             {"block_k", c.block_k},
             {"tokens", pr.S},
             {"heads", pr.H},
             {"query_blocks", pr.QB},
             {"video_blocks", pr.VB},
             {"segments", segs.dump()},
             {"compensation", c.compensation},
             {"params", sol_params(c).dump()}};
  // The video blocks follow from segments and block_k; stored too where they fit an
  // attribute (HDF5's 64 KiB), so a reader checks its derivation instead of trusting it.
  if (pr.VB <= kSolRoutingAttrMaxVideoBlocks) {
    d.attrs["video_block_start"] = starts;
    d.attrs["video_block_length"] = lengths;
  }
  return d;
}

nlohmann::json sol_params(const SolConfig& c) {
  return {{"backend", "sol"},
          {"tau", c.tau},
          {"block_q", c.block_q},
          {"block_k", c.block_k},
          {"selector", sol_selector_name(c.selector)},
          {"topk", c.topk},
          {"cdf", c.cdf},
          {"compensation", c.compensation},
          {"precision", sol_precision_name(c.precision)},
          {"round_out", c.round_out}};
}

namespace {

class SolBackend : public AttentionBackend {
 public:
  SolBackend(SolConfig c, std::string name) : c_(std::move(c)), name_(std::move(name)) {}
  std::string name() const override { return name_; }
  nlohmann::json params() const override { return sol_params(c_); }
  AttentionResult run(const AttentionProblem& problem) override { return sol_attention(problem, c_); }
  bool reads_stored_inputs() const override { return true; }  // sol_prepare_inputs converts them

 private:
  SolConfig c_;
  std::string name_;
};

}  // namespace

SolConfig sol_config_from(BackendParams& p, std::string* out_name) {
  SolConfig c;
  const SolConfig def;
  c.tau = p.get_double("tau", def.tau);
  c.block_q = p.get_int("block_q", def.block_q);
  c.block_k = p.get_int("block_k", def.block_k);
  if (c.block_q <= 0 || c.block_k <= 0 || c.block_k > kSolMaxBlockK || c.block_q > (1 << 20))
    throw InputError("backend '" + p.spec() + "': block_q must be positive and block_k in [1, " +
                     std::to_string(kSolMaxBlockK) + "]");
  const std::string sel = p.get_choice("selector", "zscore", {"zscore", "topk", "cdf"});
  c.selector = sel == "zscore" ? SolSelector::zscore : sel == "topk" ? SolSelector::topk : SolSelector::cdf;
  c.topk = p.get_double("topk", def.topk);
  if (!(c.topk > 0 && c.topk <= 1))
    throw InputError("backend '" + p.spec() + "': topk=" + backend_param_text(c.topk) + " must be in (0, 1]");
  c.cdf = p.get_double("cdf", def.cdf);
  if (!(c.cdf > 0 && c.cdf <= 1))
    throw InputError("backend '" + p.spec() + "': cdf=" + backend_param_text(c.cdf) + " must be in (0, 1]");
  c.compensation = p.get_bool("compensation", true);
  const std::string prec = p.get_choice("precision", "bf16", {"bf16", "int8_qk", "int8_qk_pv"});
  c.precision = prec == "bf16" ? SolPrecision::bf16
                : prec == "int8_qk" ? SolPrecision::int8_qk
                                    : SolPrecision::int8_qk_pv;
  c.round_out = p.get_bool("round_out", true);
  c.dump = p.get_bool("dump", false);
  c.store_routing = p.get_bool("routing", false);

  std::string name = "sol_";
  switch (c.selector) {
    case SolSelector::zscore: name += "tau" + backend_param_text(c.tau); break;
    case SolSelector::topk: name += "topk" + backend_param_text(c.topk); break;
    case SolSelector::cdf: name += "cdf" + backend_param_text(c.cdf); break;
  }
  name += std::string("_") + prec;
  if (c.block_q != def.block_q) name += "_bq" + std::to_string(c.block_q);
  if (c.block_k != def.block_k) name += "_bk" + std::to_string(c.block_k);
  if (!c.compensation) name += "_nocomp";
  if (!c.round_out) name += "_f32out";
  if (out_name) *out_name = name;
  return c;
}

std::unique_ptr<AttentionBackend> make_sol_backend(BackendParams& p) {
  std::string name;
  const SolConfig c = sol_config_from(p, &name);
  p.finish();
  return std::make_unique<SolBackend>(c, name);
}

}  // namespace ts
