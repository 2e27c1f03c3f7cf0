#include "reference/numerics/nvfp4.hpp"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <string>

#include "core/error.hpp"
#include "reference/numerics/convert.hpp"

namespace ts::num {

namespace {

constexpr float kGlobalMax = 2688.0f;  // 448 * 6, exact in float32
// Below this many elements a parallel region costs more than it saves.
constexpr int64_t kParallelMin = 1 << 16;

void check_shape(int64_t rows, int64_t cols, const char* what) {
  if (rows < 0 || cols < 0) {
    throw InputError(std::string("nvfp4: ") + what + " has a negative dimension (" + std::to_string(rows) +
                     " x " + std::to_string(cols) + ")");
  }
}

using GlobalScale = Nvfp4GlobalScale;

GlobalScale global_scale(const float* x, int64_t n, const Nvfp4Options& opt) {
  if (opt.static_amax && opt.input_scale) {
    throw InputError("nvfp4: static_amax and input_scale are both set; give one global scale source");
  }
  GlobalScale g;
  if (opt.input_scale) {
    const float s = *opt.input_scale;
    if (!(s > 0.0f) || !std::isfinite(s)) {
      throw InputError("nvfp4: input_scale must be finite and > 0, got " + std::to_string(s));
    }
    if (opt.recipe == Nvfp4Recipe::modelopt) {
      g.s_dec = s;
      g.s_enc = 1.0f / s;
    } else {
      // The te stacks quantise activations with S_enc = 1 / input_scale and,
      // like the dynamic path, decode with S_dec = 1 / S_enc.
      g.s_enc = std::min(1.0f / s, FLT_MAX);
      g.s_dec = 1.0f / g.s_enc;
    }
    return g;
  }
  if (opt.static_amax) {
    if (!(*opt.static_amax >= 0.0f)) {
      throw InputError("nvfp4: static_amax must be >= 0, got " + std::to_string(*opt.static_amax));
    }
    return nvfp4_global_scale(*opt.static_amax, opt.recipe);
  }
  return nvfp4_global_scale(nvfp4_amax(x, n), opt.recipe);
}

}  // namespace

Nvfp4GlobalScale nvfp4_global_scale(float amax, Nvfp4Recipe recipe) {
  Nvfp4GlobalScale g;
  g.amax = amax;
  if (recipe == Nvfp4Recipe::modelopt) {
    // ModelOpt: weights_scaling_factor_2 = amax / (6 * 448). amax = 0 (or a
    // value that makes it 0 or Inf) would give NaN scales there; use 1.
    float s2 = g.amax / kGlobalMax;
    if (!(s2 > 0.0f) || !std::isfinite(s2)) s2 = 1.0f;
    g.s_dec = s2;
    g.s_enc = 1.0f / s2;
  } else {
    // TE: S_enc = 448 * 6 / amax clamped to FLT_MAX; 1 when amax = 0 or S_enc = 0.
    float s = std::min(kGlobalMax / g.amax, FLT_MAX);
    if (g.amax == 0.0f || s == 0.0f) s = 1.0f;
    g.s_enc = s;
    g.s_dec = 1.0f / s;
  }
  return g;
}

const char* nvfp4_recipe_name(Nvfp4Recipe r) {
  switch (r) {
    case Nvfp4Recipe::te: return "te";
    case Nvfp4Recipe::te_rcp6: return "te_rcp6";
    case Nvfp4Recipe::modelopt: return "modelopt";
  }
  return "?";
}

Nvfp4Recipe nvfp4_recipe_from_name(const std::string& name) {
  if (name == "te") return Nvfp4Recipe::te;
  if (name == "te_rcp6") return Nvfp4Recipe::te_rcp6;
  if (name == "modelopt") return Nvfp4Recipe::modelopt;
  throw InputError("nvfp4: unknown recipe '" + name + "' (expected te, te_rcp6 or modelopt)");
}

uint8_t Nvfp4Tensor::code(int64_t r, int64_t c) const {
  return e2m1_unpack(codes.data() + r * row_bytes(), c);
}

float Nvfp4Tensor::block_scale(int64_t r, int64_t b) const { return e4m3_decode(scale_code(r, b)); }

float Nvfp4Tensor::value(int64_t r, int64_t c) const {
  return (e2m1_decode(code(r, c)) * block_scale(r, c / kNvfp4Block)) * s_dec;
}

float nvfp4_amax(const float* x, int64_t n) {
  float m = 0.0f;
  for (int64_t i = 0; i < n; ++i) {
    const float a = std::fabs(x[i]);
    if (a > m) m = a;  // false for NaN
  }
  return m;
}

Nvfp4Tensor nvfp4_quantize(const float* x, int64_t rows, int64_t cols, const Nvfp4Options& opt) {
  check_shape(rows, cols, "input");
  Nvfp4Tensor t;
  t.rows = rows;
  t.cols = cols;
  t.recipe = opt.recipe;
  t.blocks_per_row = (cols + kNvfp4Block - 1) / kNvfp4Block;
  const GlobalScale g = global_scale(x, rows * cols, opt);
  t.amax = g.amax;
  t.s_enc = g.s_enc;
  t.s_dec = g.s_dec;
  t.codes.assign(static_cast<size_t>(rows * t.row_bytes()), 0);
  t.scales.assign(static_cast<size_t>(rows * t.blocks_per_row), 0);

#pragma omp parallel for schedule(static) if (rows * cols >= kParallelMin)
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * cols;
    uint8_t* cr = t.codes.data() + r * t.row_bytes();
    for (int64_t b = 0; b < t.blocks_per_row; ++b) {
      const int64_t k0 = b * kNvfp4Block;
      const int64_t k1 = std::min(cols, k0 + kNvfp4Block);
      float bamax = 0.0f;
      for (int64_t k = k0; k < k1; ++k) {
        const float a = std::fabs(xr[k]);
        if (a > bamax) bamax = a;
      }
      const uint8_t sc = nvfp4_block_scale_code(bamax, g.s_enc, g.s_dec, opt.recipe);
      t.scales[static_cast<size_t>(r * t.blocks_per_row + b)] = sc;
      const float factor = nvfp4_element_factor(e4m3_decode(sc), g.s_dec, opt.recipe);
      uint8_t q[kNvfp4Block] = {};
      for (int64_t k = k0; k < k1; ++k) q[k - k0] = nvfp4_encode_element(xr[k], factor, opt.recipe);
      for (int i = 0; i < kNvfp4Block / 2; ++i) {
        cr[b * (kNvfp4Block / 2) + i] = e2m1_pack(q[2 * i], q[2 * i + 1]);
      }
    }
  }
  return t;
}

Nvfp4Tensor nvfp4_quantize(const double* x, int64_t rows, int64_t cols, const Nvfp4Options& opt) {
  check_shape(rows, cols, "input");
  std::vector<float> xf(static_cast<size_t>(rows * cols));
  for (size_t i = 0; i < xf.size(); ++i) xf[i] = static_cast<float>(x[i]);
  return nvfp4_quantize(xf.data(), rows, cols, opt);
}

void nvfp4_dequantize(const Nvfp4Tensor& t, float* out) {
  for (int64_t r = 0; r < t.rows; ++r) {
    for (int64_t c = 0; c < t.cols; ++c) out[r * t.cols + c] = t.value(r, c);
  }
}

void nvfp4_dequantize(const Nvfp4Tensor& t, double* out) {
  // q * sb * s_dec has at most 2 + 4 + 24 significant bits: exact in float64.
  for (int64_t r = 0; r < t.rows; ++r) {
    for (int64_t c = 0; c < t.cols; ++c) {
      out[r * t.cols + c] = static_cast<double>(e2m1_decode(t.code(r, c))) *
                            static_cast<double>(t.block_scale(r, c / kNvfp4Block)) *
                            static_cast<double>(t.s_dec);
    }
  }
}

namespace {

constexpr int kMr = 6;   // X rows per micro-tile
constexpr int kNr = 8;   // W rows per micro-tile
constexpr int kJChunk = 32;  // W panels per cache chunk (32 * 8 rows * K floats)

// Operand panels: element (row, k) of panel p at [(p * Kp + k) * width + row % width],
// holding q * float(sb) (exact: at most 2 + 4 significant bits), zero padded.
std::vector<float> pack_panels(const Nvfp4Tensor& t, int width) {
  const int64_t kp = t.blocks_per_row * kNvfp4Block;
  const int64_t panels = (t.rows + width - 1) / width;
  std::vector<float> p(static_cast<size_t>(panels * kp * width), 0.0f);
#pragma omp parallel for schedule(static) if (t.rows * kp >= kParallelMin)
  for (int64_t r = 0; r < t.rows; ++r) {
    float* base = p.data() + ((r / width) * kp) * width + (r % width);
    const uint8_t* cr = t.codes.data() + r * t.row_bytes();
    for (int64_t b = 0; b < t.blocks_per_row; ++b) {
      const float sb = t.block_scale(r, b);
      for (int64_t k = b * kNvfp4Block; k < (b + 1) * kNvfp4Block; ++k) {
        base[k * width] = e2m1_decode(e2m1_unpack(cr, k)) * sb;
      }
    }
  }
  return p;
}

// One kMr x kNr output tile over all K. Within a 16-block every partial sum is
// sx * sw * (multiple of 1/4 below 577): at most 20 significant bits, exact
// in float32 whatever the order, so the block is computed with 4-wide vectors
// (GCC/Clang vector extension, lowered to SSE or NEON); the block partials
// then enter `acc` strictly in block order.
typedef float V4 __attribute__((vector_size(16)));
constexpr int kNv = kNr / 4;

inline V4 load4(const float* p) {
  V4 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

template <class Acc>
void micro_tile(const float* xa, const float* wb, int64_t nblocks, Acc acc[kMr][kNr]) {
  for (int r = 0; r < kMr; ++r)
    for (int c = 0; c < kNr; ++c) acc[r][c] = Acc(0);
  for (int64_t b = 0; b < nblocks; ++b) {
    const float* xk = xa + b * kNvfp4Block * kMr;
    const float* wk = wb + b * kNvfp4Block * kNr;
    V4 part[kMr][kNv] = {};
    for (int kk = 0; kk < kNvfp4Block; ++kk) {
      V4 w[kNv];
      for (int v = 0; v < kNv; ++v) w[v] = load4(wk + kk * kNr + 4 * v);
      for (int r = 0; r < kMr; ++r) {
        const float a = xk[kk * kMr + r];
        for (int v = 0; v < kNv; ++v) part[r][v] += a * w[v];
      }
    }
    for (int r = 0; r < kMr; ++r)
      for (int c = 0; c < kNr; ++c) acc[r][c] += static_cast<Acc>(part[r][c / 4][c % 4]);
  }
}

template <class Acc>
void gemm_impl(const Nvfp4Tensor& X, const Nvfp4Tensor& W, float* Y, const Nvfp4GemmOptions& opt) {
  const int64_t kp = X.blocks_per_row * kNvfp4Block;
  const std::vector<float> xp = pack_panels(X, kMr);
  const std::vector<float> wp = pack_panels(W, kNr);
  const int64_t ipanels = (X.rows + kMr - 1) / kMr;
  const int64_t jpanels = (W.rows + kNr - 1) / kNr;
  const int64_t n = W.rows;
  const float alpha_f = X.s_dec * W.s_dec;
  const double alpha_d = static_cast<double>(X.s_dec) * static_cast<double>(W.s_dec);

  for (int64_t jc = 0; jc < jpanels; jc += kJChunk) {
    const int64_t jend = std::min(jpanels, jc + kJChunk);
#pragma omp parallel for schedule(static) if (ipanels * (jend - jc) * kp * (kMr * kNr) >= kParallelMin * 64)
    for (int64_t ip = 0; ip < ipanels; ++ip) {
      const float* xa = xp.data() + ip * kp * kMr;
      for (int64_t jp = jc; jp < jend; ++jp) {
        Acc acc[kMr][kNr];
        micro_tile<Acc>(xa, wp.data() + jp * kp * kNr, X.blocks_per_row, acc);
        for (int r = 0; r < kMr; ++r) {
          const int64_t i = ip * kMr + r;
          if (i >= X.rows) break;
          for (int c = 0; c < kNr; ++c) {
            const int64_t j = jp * kNr + c;
            if (j >= n) break;
            float y;
            if constexpr (sizeof(Acc) == sizeof(float)) {
              y = static_cast<float>(acc[r][c]) * alpha_f;
            } else {
              y = static_cast<float>(static_cast<double>(acc[r][c]) * alpha_d);
            }
            if (opt.bias) y += opt.bias[j];
            Y[i * n + j] = opt.round_to_bf16 ? bf16_round(y) : y;
          }
        }
      }
    }
  }
}

void check_gemm_operands(const Nvfp4Tensor& X, const Nvfp4Tensor& W) {
  if (X.cols != W.cols) {
    throw InputError("nvfp4_gemm: K mismatch, X is " + std::to_string(X.rows) + " x " + std::to_string(X.cols) +
                     " and W is " + std::to_string(W.rows) + " x " + std::to_string(W.cols));
  }
  if (X.blocks_per_row != W.blocks_per_row ||
      X.codes.size() != static_cast<size_t>(X.rows * X.row_bytes()) ||
      W.codes.size() != static_cast<size_t>(W.rows * W.row_bytes()) ||
      X.scales.size() != static_cast<size_t>(X.rows * X.blocks_per_row) ||
      W.scales.size() != static_cast<size_t>(W.rows * W.blocks_per_row)) {
    throw InputError("nvfp4_gemm: an operand's codes or scales do not match its shape");
  }
}

}  // namespace

void nvfp4_gemm(const Nvfp4Tensor& X, const Nvfp4Tensor& W, float* Y, const Nvfp4GemmOptions& opt) {
  check_gemm_operands(X, W);
  if (opt.fp64_accumulate) {
    gemm_impl<double>(X, W, Y, opt);
  } else {
    gemm_impl<float>(X, W, Y, opt);
  }
}

void nvfp4_gemm_reference(const Nvfp4Tensor& X, const Nvfp4Tensor& W, double* Y) {
  check_gemm_operands(X, W);
  const int64_t k = X.cols;
  std::vector<double> xd(static_cast<size_t>(X.rows * k)), wd(static_cast<size_t>(W.rows * k));
  nvfp4_dequantize(X, xd.data());
  nvfp4_dequantize(W, wd.data());
  for (int64_t i = 0; i < X.rows; ++i) {
    for (int64_t j = 0; j < W.rows; ++j) {
      double s = 0.0;
      for (int64_t kk = 0; kk < k; ++kk) s += xd[i * k + kk] * wd[j * k + kk];
      Y[i * W.rows + j] = s;
    }
  }
}

}  // namespace ts::num
