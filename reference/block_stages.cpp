#include "reference/block_stages.hpp"

#include <bit>
#include <cmath>
#include <limits>
#include <vector>

#include "core/error.hpp"
#include "reference/numerics/detmath.hpp"
#include "reference/rms_norm.hpp"
#include "reference/rope.hpp"

namespace ts::blk {

float bf16_round_f64(double x) {
  float f = static_cast<float>(x);
  if (std::isfinite(f) && static_cast<double>(f) != x) {
    // Round to odd: of the two floats around x, keep the one with an odd
    // mantissa; float32 has 16 more bits than bf16, so RNE from there is exact.
    if ((std::bit_cast<uint32_t>(f) & 1u) == 0)
      f = std::nextafter(f, x > static_cast<double>(f) ? std::numeric_limits<float>::infinity()
                                                       : -std::numeric_limits<float>::infinity());
  }
  return num::bf16_round(f);
}

void rms_norm_row(const double* x, int64_t n, const double* w, double eps, Arith a, double* out) {
  if (a == Arith::f64) {
    rms_norm(x, n, w, eps, out);
    return;
  }
  rms_norm_row_bf16(x, n, w, eps, out);
}

namespace {
DType out_dtype(Arith a) { return a == Arith::f64 ? DType::f64 : DType::bf16; }

void require_rows(const Tensor& t, int64_t S, int64_t n, const char* what) {
  if (t.rank() < 2 || t.dim(0) != S || t.numel() != S * n)
    throw InputError(std::string(what) + ": shape " + t.shape_string() + ", expected [" +
                     std::to_string(S) + ", " + std::to_string(n) + "]");
}
}  // namespace

Tensor rms_norm_stage(const Tensor& x, const Tensor& w, double eps, Arith a) {
  const int64_t S = x.dim(0), M = x.numel() / S;
  if (w.numel() != M) throw InputError("rms_norm: weight has " + std::to_string(w.numel()) +
                                       " elements, rows have " + std::to_string(M));
  Tensor y(x.shape, out_dtype(a));
#pragma omp parallel for schedule(static)
  for (int64_t s = 0; s < S; ++s) rms_norm_row(x.ptr() + s * M, M, w.ptr(), eps, a, y.ptr() + s * M);
  return y;
}

Tensor modulate_stage(const Tensor& h, const BlockInputs& in, int shift, int scale, Arith a) {
  const int64_t S = in.tokens(), M = in.config.hidden;
  require_rows(h, S, M, "modulate");
  Tensor y(h.shape, out_dtype(a));
#pragma omp parallel for schedule(static)
  for (int64_t s = 0; s < S; ++s) {
    const double *hp = h.ptr() + s * M, *sh = in.mod(s, shift), *sc = in.mod(s, scale);
    double* yp = y.ptr() + s * M;
    if (a == Arith::f64) {
      for (int64_t c = 0; c < M; ++c) yp[c] = modulate_f64(hp[c], sh[c], sc[c]);
    } else {
      for (int64_t c = 0; c < M; ++c)
        yp[c] = modulate_bf16(static_cast<float>(hp[c]), static_cast<float>(sh[c]),
                              static_cast<float>(sc[c]));
    }
  }
  return y;
}

Tensor gated_residual_stage(const Tensor& base, const Tensor& yin, const BlockInputs& in, int gate,
                            Arith a) {
  const int64_t S = in.tokens(), M = in.config.hidden;
  require_rows(base, S, M, "residual");
  require_rows(yin, S, M, "residual");
  Tensor y({S, M}, out_dtype(a));
#pragma omp parallel for schedule(static)
  for (int64_t s = 0; s < S; ++s) {
    const double *bp = base.ptr() + s * M, *vp = yin.ptr() + s * M, *g = in.mod(s, gate);
    double* yp = y.ptr() + s * M;
    if (a == Arith::f64) {
      for (int64_t c = 0; c < M; ++c) yp[c] = gated_residual_f64(bp[c], g[c], vp[c]);
    } else {
      for (int64_t c = 0; c < M; ++c)
        yp[c] = gated_residual_bf16(static_cast<float>(bp[c]), static_cast<float>(g[c]),
                                    static_cast<float>(vp[c]));
    }
  }
  return y;
}

Tensor swiglu_stage(const Tensor& fc1, Arith a) {
  if (fc1.rank() != 2 || fc1.dim(1) % 2)
    throw InputError("swiglu: fc1 shape " + fc1.shape_string() + ", expected [S, 2F]");
  const int64_t S = fc1.dim(0), F = fc1.dim(1) / 2;
  Tensor y({S, F}, out_dtype(a));
#pragma omp parallel for schedule(static)
  for (int64_t s = 0; s < S; ++s) {
    const double *v = fc1.ptr() + s * 2 * F, *g = v + F;
    double* yp = y.ptr() + s * F;
    if (a == Arith::f64) {
      for (int64_t c = 0; c < F; ++c) yp[c] = swiglu_f64(v[c], g[c]);
    } else {
      for (int64_t c = 0; c < F; ++c)
        yp[c] = swiglu_bf16(static_cast<float>(v[c]), static_cast<float>(g[c]));
    }
  }
  return y;
}

Tensor qk_rope_stage(const Tensor& qkv, int which, const Tensor& norm_w, const BlockInputs& in,
                     Arith a) {
  const BlockConfig& c = in.config;
  const int64_t S = in.tokens(), H = c.heads, D = c.head_dim, F = c.rope_freqs_per_axis;
  if (qkv.rank() != 4 || qkv.dim(0) != S || qkv.dim(1) != 3 || qkv.dim(2) != H || qkv.dim(3) != D)
    throw InputError("rope: qkv shape " + qkv.shape_string() + ", expected [S, 3, H, D]");
  if (norm_w.numel() != D) throw InputError("rope: q/k norm weight must have head_dim elements");
  const Rope rope(c);
  Tensor y({S, H, D}, out_dtype(a));
#pragma omp parallel
  {
    std::vector<float> cs(static_cast<size_t>(3 * F)), sn(static_cast<size_t>(3 * F));
#pragma omp for schedule(static)
    for (int64_t s = 0; s < S; ++s) {
      const double* pos = in.positions.ptr() + s * 3;
      if (a == Arith::bf16) {
        for (int ax = 0; ax < 3; ++ax)
          for (int64_t i = 0; i < F; ++i) {
            double sd, cd;
            detmath::sincos(pos[ax] * rope.inv_freq()[static_cast<size_t>(i)], &sd, &cd);
            cs[static_cast<size_t>(ax * F + i)] = static_cast<float>(cd);
            sn[static_cast<size_t>(ax * F + i)] = static_cast<float>(sd);
          }
      }
      for (int64_t h = 0; h < H; ++h) {
        const double* src = qkv.ptr() + ((s * 3 + which) * H + h) * D;
        double* row = y.ptr() + (s * H + h) * D;
        rms_norm_row(src, D, norm_w.ptr(), c.rms_eps, a, row);
        if (a == Arith::f64) {
          rope.apply(row, pos);
          continue;
        }
        for (int ax = 0; ax < 3; ++ax) {
          double* base = row + 2 * F * ax;
          for (int64_t i = 0; i < F; ++i) {
            const float co = cs[static_cast<size_t>(ax * F + i)], si = sn[static_cast<size_t>(ax * F + i)];
            float y1, y2;
            rope_pair_bf16(static_cast<float>(base[i]), static_cast<float>(base[i + F]), co, si, &y1, &y2);
            base[i] = y1;
            base[i + F] = y2;
          }
        }
      }
    }
  }
  return y;
}

Tensor attention_stage(const Tensor& qkv, const Tensor& q_rope, const Tensor& k_rope,
                       const BlockConfig& c, AttentionBackend& attention, Arith a,
                       nlohmann::json& stats) {
  const int64_t S = q_rope.shape.at(0), H = c.heads, D = c.head_dim;
  AttentionProblem p;
  p.q = BSHDView::of(q_rope);
  p.k = BSHDView::of(k_rope);
  p.v = p.q;
  p.v.p = qkv.ptr() + 2 * H * D;
  p.v.sS = 3 * H * D;
  p.input_dtype = out_dtype(a);
  p.segments = c.segments;
  p.softmax_scale = c.softmax_scale;
  p.config = c;
  p.validate();
  AttentionResult r = attention.run(p);
  if (r.out.shape != std::vector<int64_t>{S, H, D})
    throw InternalError("block: attention backend '" + attention.name() + "' returned shape " +
                        r.out.shape_string());
  stats = r.stats;
  if (a == Arith::bf16 && r.out.dtype != DType::bf16) {
    for (double& v : r.out.data) v = bf16_round_f64(v);
    r.out.dtype = DType::bf16;
  }
  return std::move(r.out);
}

}  // namespace ts::blk
