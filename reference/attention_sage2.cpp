#include "reference/attention_sage2.hpp"

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>

#include "core/error.hpp"
#include "core/progress.hpp"
#include "reference/numerics/convert.hpp"
#include "reference/numerics/detmath.hpp"
#include "reference/sage2_arith.hpp"
#include "reference/sage2_lanes.hpp"
#include "reference/sage2_presets.hpp"

namespace ts {
namespace {

template <typename T>
using RowMat = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

using MapF = Eigen::Map<const RowMat<float>>;
using MapI8 = Eigen::Map<const RowMat<int8_t>>;

// The operands of head h that each of its tiles reads whole, converted once
// per head and thread instead of once per tile (at medium the per-tile copies
// moved 12 MB a tile): K's INT8 codes as float, and V as float64.
struct HeadOperands {
  int64_t h = -1;
  RowMat<float> k8;
  RowMat<double> v;
  bool v_nan = false;
  void load(const Sage2Prepared& pr, const Sage2Config& c, int64_t head) {
    if (head == h) return;
    h = head;
    if (c.quant_qk) k8 = MapI8(pr.k8.head(h), pr.S, pr.D).cast<float>();
    // V as float64 so that a chunk's P·V sum is exact: P8 and V8 are E4M3
    // values (multiples of 2^-9 with 4 significant bits), so products are
    // multiples of 2^-18 below 2^18, and a 32-key sum needs < 45 bits.
    v = c.quant_v ? Eigen::Map<const RowMat<float>>(pr.v8.values.data() + h * pr.S * pr.D, pr.S, pr.D).cast<double>()
                  : MapF(pr.v_raw.head(h), pr.S, pr.D).cast<double>();
    v_nan = v.hasNaN();
  }
};

// Whether a key block's P·V chunks may skip Eigen's product: with P and V
// both E4M3 every chunk sum is exact (HeadOperands says why), so any
// summation order gives its bits, and a tiled loop is twice as fast. Not
// where a NaN is summed (which NaN propagates depends on the order).
bool exact_chunks(const Sage2Config& c, const HeadOperands& ops, const RowMat<double>& pb, int64_t nk) {
  return c.round_p && c.quant_v && !ops.v_nan && !pb.leftCols(nk).hasNaN();
}

// One (head, query tile) task: scores, online softmax per key block, P·V in
// the chosen accumulation mode, finish. Writes rows [r0, r0+nr) of head h.
void attend_tile(const Sage2Prepared& pr, const Sage2Config& c, float sm_scale, int64_t h, int64_t r0,
                 int64_t nr, HeadOperands& ops, Tensor& out, Tensor* p_dump) {
  const int64_t S = pr.S, D = pr.D;
  ops.load(pr, c, h);

  // Scores. INT8 codes as float: |products| <= 2^14 and D <= 1024 keep every
  // partial sum an integer below 2^24, so the float GEMM gives the exact int32
  // dot product whatever its summation order.
  RowMat<float> sc(nr, S);
  if (c.quant_qk) {
    const RowMat<float> qf = MapI8(pr.q8.head(h) + r0 * D, nr, D).cast<float>();
    sc.noalias() = qf * ops.k8.transpose();
    // s = (float(int32) * (q_scale * k_scale)) * sm_scale, each step float32:
    // the dequantisation factor of the tile first, then the softmax scale.
    std::vector<float> ks(static_cast<size_t>(S));
    for (int64_t j = 0; j < S; ++j) ks[j] = pr.k8.scale(h, j);
    for (int64_t r = 0; r < nr; ++r) {
      const float qs = pr.q8.scale(h, r0 + r);
      float* row = sc.data() + r * S;
      for (int64_t j = 0; j < S; ++j) row[j] = (row[j] * (qs * ks[j])) * sm_scale;
    }
  } else {
    sc.noalias() = MapF(pr.q_raw.head(h) + r0 * D, nr, D) * MapF(pr.k_raw.head(h), S, D).transpose();
    sc *= sm_scale;
  }

  const RowMat<double>& vd = ops.v;

  const int64_t kb = c.key_block;
  constexpr int64_t kChunk = sage2::kPvChunk;
  std::vector<float> m(static_cast<size_t>(nr), sage2::kInitialMax), den(static_cast<size_t>(nr), 0.0f),
      oscale(static_cast<size_t>(nr));
  RowMat<float> acc = RowMat<float>::Zero(nr, D);
  RowMat<float> part(nr, D);
  RowMat<double> half(nr, D);
  RowMat<double> pb(nr, kb);
  std::vector<float> prow(static_cast<size_t>(kb));
  RowMat<double> chunk(nr, D);

  for (int64_t k0 = 0; k0 < S; k0 += kb) {
    const int64_t nk = std::min(kb, S - k0);
    for (int64_t r = 0; r < nr; ++r) {
      oscale[r] = sage2_lanes::softmax_step(sc.data() + r * S + k0, prow.data(), nk, m[r], den[r], c.round_p);
      for (int64_t j = 0; j < nk; ++j) pb(r, j) = prow[static_cast<size_t>(j)];
      if (p_dump)
        for (int64_t j = 0; j < nk; ++j) p_dump->data[r * S + k0 + j] = pb(r, j);
    }

    if (c.accum == Sage2Accum::fp32)
      for (int64_t r = 0; r < nr; ++r) acc.row(r) *= oscale[r];
    else if (c.accum == Sage2Accum::fp32_fp32)
      part.setZero();
    else
      half.setZero();

    const bool exact = exact_chunks(c, ops, pb, nk);
    for (int64_t c0 = 0; c0 < nk; c0 += kChunk) {
      const int64_t nc = std::min(kChunk, nk - c0);
      // Below rows + cols + depth = 20 Eigen sums coefficient by coefficient
      // from the first product: an all-zero sum keeps that product's sign,
      // where its GEMM, as the tiled loop, starts from +0.
      if (exact && nr + D + nc >= 20)
        sage2_lanes::exact_pv(pb.data() + c0, kb, vd.data() + (k0 + c0) * D, nr, nc, D, chunk.data());
      else
        chunk.noalias() = pb.middleCols(c0, nc) * vd.middleRows(k0 + c0, nc);
      const double* cp = chunk.data();
      switch (c.accum) {
        case Sage2Accum::fp32: sage2_lanes::add_f32(acc.data(), cp, nr * D); break;
        case Sage2Accum::fp32_fp32: sage2_lanes::add_f32(part.data(), cp, nr * D); break;
        // fp16 accumulator of the MMA: each k32 step rounds (C + exact sum) once.
        case Sage2Accum::fp32_fp16: sage2_lanes::add_fp16(half.data(), cp, nr * D); break;
      }
    }

    if (c.accum != Sage2Accum::fp32) {
      for (int64_t r = 0; r < nr; ++r) {
        float* a = acc.data() + r * D;
        for (int64_t d = 0; d < D; ++d) {
          const float blockv = c.accum == Sage2Accum::fp32_fp32
                                   ? part(r, d)
                                   : static_cast<float>(half(r, d));
          a[d] = a[d] * oscale[r] + blockv;
        }
      }
    }
  }

  // Finish: O = acc * (1/denominator) * v_scale[channel], float32, then bf16.
  const float* vs = c.quant_v ? pr.v8.scales.data() + h * D : nullptr;
  for (int64_t r = 0; r < nr; ++r)
    for (int64_t d = 0; d < D; ++d) {
      float o = sage2::normalize(acc(r, d), den[r]);
      if (vs) o = o * vs[d];
      out.data[((r0 + r) * pr.H + h) * D + d] = c.round_out ? num::bf16_round(o) : o;
    }
}

// [H][S][D] codes to an [S, H, D] tensor.
template <typename T>
Tensor to_shd(const T* x, int64_t H, int64_t S, int64_t D, DType t) {
  Tensor out({S, H, D}, t);
  for (int64_t h = 0; h < H; ++h)
    for (int64_t s = 0; s < S; ++s)
      for (int64_t d = 0; d < D; ++d)
        out.data[(s * H + h) * D + d] = static_cast<double>(x[(h * S + s) * D + d]);
  return out;
}

Tensor matrix(const std::vector<float>& x, int64_t rows, int64_t cols, DType t) {
  Tensor out({rows, cols}, t);
  for (int64_t i = 0; i < rows * cols; ++i) out.data[i] = x[static_cast<size_t>(i)];
  return out;
}

}  // namespace

const char* sage2_accum_name(Sage2Accum a) {
  switch (a) {
    case Sage2Accum::fp32: return "fp32";
    case Sage2Accum::fp32_fp32: return "fp32+fp32";
    case Sage2Accum::fp32_fp16: return "fp32+fp16";
  }
  return "?";
}

Sage2Config sage2_preset(const std::string& preset) {
  for (const auto& p : sage2_presets())
    if (preset == p.name) return p.config;
  throw InputError("sage2: unknown preset '" + preset + "' (expected one of " + sage2_preset_names(", ") + ")");
}

nlohmann::json sage2_params(const Sage2Config& c) {
  return {{"backend", "sage2"},
          {"preset", c.preset},
          {"granularity", c.granularity == sage2::Granularity::per_warp ? "per_warp" : "per_thread"},
          {"blkq", c.blkq},
          {"warpq", c.warpq},
          {"blkk", c.blkk},
          {"warpk", c.warpk},
          {"key_block", c.key_block},
          {"accum", sage2_accum_name(c.accum)},
          {"scale_max", c.scale_max},
          {"smooth_k", c.smooth_k},
          {"quant_qk", c.quant_qk},
          {"quant_v", c.quant_v},
          {"round_p", c.round_p},
          {"round_out", c.round_out}};
}

Sage2Prepared sage2_prepare(const AttentionProblem& p, const Sage2Config& c) {
  Sage2Prepared pr;
  pr.H = p.q.H;
  pr.S = p.q.S;
  pr.D = p.q.D;
  pr.q_raw = sage2::to_head_major(p.q, p.q_stored);
  pr.k_raw = sage2::to_head_major(p.k, p.k_stored);
  pr.v_raw = sage2::to_head_major(p.v, p.v_stored);
  if (c.smooth_k) {
    pr.km = sage2::smoothing_mean(pr.k_raw, p.input_dtype);
    pr.k_raw = sage2::subtract_mean(pr.k_raw, pr.km, c.granularity, p.input_dtype);
  }
  if (c.quant_qk) {
    pr.q8 = sage2::quantize_int8(pr.q_raw, {c.granularity, true, c.blkq, c.warpq});
    pr.k8 = sage2::quantize_int8(pr.k_raw, {c.granularity, false, c.blkk, c.warpk});
  }
  if (c.quant_v) pr.v8 = sage2::quantize_v_fp8(pr.v_raw, c.scale_max);
  return pr;
}

float sage2_sm_scale(double softmax_scale) {
  // f32(softmax_scale) * f32(log2 e), as the kernel receives it.
  return static_cast<float>(softmax_scale) * 1.44269504088896340736f;
}

void sage2_check(const AttentionProblem& problem, const Sage2Config& c) {
  problem.validate();
  const int64_t S = problem.q.S, H = problem.q.H, D = problem.q.D;
  if (c.quant_qk && D > 1024)
    throw InputError("sage2: head_dim " + std::to_string(D) +
                     " > 1024 is beyond the emulation's exact int32 dot products");
  if (c.key_block <= 0 || c.key_block % 32 != 0)
    throw InputError("sage2: key_block " + std::to_string(c.key_block) + " is not a multiple of 32");
  if (c.blkq <= 0) throw InputError("sage2: blkq must be positive");
  const int64_t tiles = (S + c.blkq - 1) / c.blkq;
  if (c.dump && (c.dump_head < 0 || c.dump_head >= H))
    throw InputError("sage2: dump_head " + std::to_string(c.dump_head) + " is outside [0, " +
                     std::to_string(H) + ")");
  if (c.dump && (c.dump_qblock < 0 || c.dump_qblock >= tiles))
    throw InputError("sage2: dump_qblock " + std::to_string(c.dump_qblock) + " is outside [0, " +
                     std::to_string(tiles) + ")");
}

AttentionResult sage2_attention(const AttentionProblem& problem, const Sage2Config& c) {
  sage2_check(problem, c);
  const int64_t S = problem.q.S, H = problem.q.H, D = problem.q.D;
  const int64_t tiles = (S + c.blkq - 1) / c.blkq;
  const Sage2Prepared pr = sage2_prepare(problem, c);
  const float sm_scale = sage2_sm_scale(problem.softmax_scale);

  AttentionResult res;
  res.out = Tensor({S, H, D}, c.round_out ? DType::bf16 : DType::f32);
  Tensor p_dump;
  if (c.dump) p_dump = Tensor({std::min(c.blkq, S - c.dump_qblock * c.blkq), S}, DType::f32);

  // Tasks are independent and each runs in a fixed order: the bits do not
  // depend on the thread count.
  Progress progress("sage2 emulation", H * tiles);
#pragma omp parallel
  {
    HeadOperands ops;
#pragma omp for schedule(dynamic, 1)
    for (int64_t t = 0; t < H * tiles; ++t) {
      const int64_t h = t / tiles, tile = t % tiles;
      const int64_t r0 = tile * c.blkq, nr = std::min(c.blkq, S - r0);
      Tensor* dump = (c.dump && h == c.dump_head && tile == c.dump_qblock) ? &p_dump : nullptr;
      attend_tile(pr, c, sm_scale, h, r0, nr, ops, res.out, dump);
      progress.advance();
    }
  }

  res.stats["v_zero_channels"] = c.quant_v ? pr.v8.zero_channels : 0;
  if (c.dump) {
    if (c.quant_qk) {
      res.intermediates["q_int8"] = to_shd(pr.q8.codes.data(), H, S, D, DType::i8);
      res.intermediates["k_int8"] = to_shd(pr.k8.codes.data(), H, S, D, DType::i8);
      res.intermediates["q_scale"] = matrix(pr.q8.scales, H, pr.q8.n_scales, DType::f32);
      res.intermediates["k_scale"] = matrix(pr.k8.scales, H, pr.k8.n_scales, DType::f32);
    }
    if (c.smooth_k) res.intermediates["km"] = matrix(pr.km, H, D, problem.input_dtype);
    if (c.quant_v) {
      res.intermediates["v_fp8"] = to_shd(pr.v8.codes.data(), H, S, D, DType::u8);
      res.intermediates["v_scale"] = matrix(pr.v8.scales, H, D, DType::f32);
    }
    res.intermediates["p_fp8"] = std::move(p_dump);
  }
  return res;
}

namespace {

class Sage2Backend : public AttentionBackend {
 public:
  Sage2Backend(Sage2Config c, std::string name) : c_(std::move(c)), name_(std::move(name)) {}
  std::string name() const override { return name_; }
  nlohmann::json params() const override { return sage2_params(c_); }
  AttentionResult run(const AttentionProblem& problem) override {
    return sage2_attention(problem, c_);
  }
  bool reads_stored_inputs() const override { return true; }  // sage2_prepare converts them

 private:
  Sage2Config c_;
  std::string name_;
};

}  // namespace

Sage2Config sage2_config_from(BackendParams& p, std::string* name) {
  std::vector<std::string> names;
  for (const auto& row : sage2_presets()) names.emplace_back(row.name);
  const std::string preset = p.get_choice("preset", sage2_default_preset().name, names);
  const Sage2Config def = sage2_preset(preset);
  Sage2Config c = def;
  std::string suffix;
  auto note = [&](const std::string& key, const std::string& value, bool changed) {
    if (changed) suffix += "_" + key + "-" + value;
  };

  const std::string gran = p.get_choice(
      "granularity", def.granularity == sage2::Granularity::per_warp ? "per_warp" : "per_thread",
      {"per_warp", "per_thread"});
  c.granularity = gran == "per_warp" ? sage2::Granularity::per_warp : sage2::Granularity::per_thread;
  note("granularity", gran, c.granularity != def.granularity);

  auto geom = [&](const char* key, int64_t& field, int64_t fallback) {
    const long long v = p.get_int(key, fallback);
    if (v <= 0 || v > (1 << 16))
      throw InputError("backend '" + p.spec() + "': " + key + "=" + std::to_string(v) +
                       " must be a positive token count");
    field = v;
    note(key, std::to_string(v), v != fallback);
  };
  geom("blkq", c.blkq, def.blkq);
  geom("warpq", c.warpq, def.warpq);
  geom("blkk", c.blkk, def.blkk);
  geom("warpk", c.warpk, def.warpk);
  geom("key_block", c.key_block, def.key_block);
  if (c.blkq % c.warpq != 0 || c.blkk % c.warpk != 0)
    throw InputError("backend '" + p.spec() + "': blkq must be a multiple of warpq and blkk of warpk");
  if (c.granularity == sage2::Granularity::per_thread && (c.warpq % 8 != 0 || c.warpk % 8 != 0))
    throw InputError("backend '" + p.spec() + "': per_thread needs warpq and warpk multiples of 8");
  if (c.key_block != 64 && c.key_block != 128)
    throw InputError("backend '" + p.spec() + "': key_block must be 64 or 128");

  const std::string accum =
      p.get_choice("accum", sage2_accum_name(def.accum), {"fp32", "fp32+fp32", "fp32+fp16"});
  c.accum = accum == "fp32" ? Sage2Accum::fp32
            : accum == "fp32+fp32" ? Sage2Accum::fp32_fp32
                                   : Sage2Accum::fp32_fp16;
  note("accum", accum, c.accum != def.accum);
  // scale_max follows the accumulation mode unless given: 2.25 keeps fp16
  // partial sums of 64 products below 65504, 448 uses FP8's whole range.
  const float sm_default = c.accum == Sage2Accum::fp32_fp16 ? 2.25f : 448.0f;
  const double sm = p.get_double("scale_max", sm_default);
  if (!(sm > 0) || sm > 448)
    throw InputError("backend '" + p.spec() + "': scale_max=" + backend_param_text(sm) + " must be in (0, 448]");
  c.scale_max = static_cast<float>(sm);
  note("scale_max", backend_param_text(sm), c.scale_max != sm_default);

  auto flag = [&](const char* key, bool& field, bool fallback, bool in_name) {
    field = p.get_bool(key, fallback);
    if (in_name) note(key, field ? "on" : "off", field != fallback);
  };
  flag("smooth_k", c.smooth_k, def.smooth_k, true);
  flag("quant_qk", c.quant_qk, true, true);
  flag("quant_v", c.quant_v, true, true);
  flag("round_p", c.round_p, true, true);
  flag("round_out", c.round_out, true, true);
  flag("dump", c.dump, false, false);
  c.dump_qblock = p.get_int("dump_qblock", 0);
  c.dump_head = p.get_int("dump_head", 0);
  if (name) *name = "sage2_" + preset + suffix;
  return c;
}

std::unique_ptr<AttentionBackend> make_sage2_backend(BackendParams& p) {
  std::string name;
  const Sage2Config c = sage2_config_from(p, &name);
  p.finish();
  return std::make_unique<Sage2Backend>(c, name);
}

}  // namespace ts
