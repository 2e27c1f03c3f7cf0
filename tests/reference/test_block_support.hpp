#pragma once
// Small block inputs for the block tests: bf16-valued, deterministic, with
// per-frame modulation rows so that modulation_row is exercised.
#include <cmath>
#include <cstdint>
#include <string>

#include "core/block_config.hpp"
#include "reference/block.hpp"

namespace blocktest {

class Rng {
 public:
  explicit Rng(uint64_t seed) : x_(seed * 0x9E3779B97F4A7C15ull + 7) {}
  double uniform() {  // [-1, 1)
    x_ ^= x_ << 13;
    x_ ^= x_ >> 7;
    x_ ^= x_ << 17;
    return static_cast<double>(x_ >> 11) / 4503599627370496.0 - 1.0;
  }
  // offset + a value of about `amp` in size, rounded to 8 significant bits.
  double bf16(double amp, double offset = 0.0) {
    const double u = offset + uniform() * amp;
    if (u == 0) return 0;
    int e;
    std::frexp(u, &e);
    return std::ldexp(std::nearbyint(std::ldexp(u, 8 - e)), e - 8);
  }

 private:
  uint64_t x_;
};

inline ts::Tensor fill(std::vector<int64_t> shape, Rng& r, double amp, double offset = 0.0) {
  ts::Tensor t(std::move(shape), ts::DType::bf16);
  for (auto& v : t.data) v = r.bf16(amp, offset);
  return t;
}

inline ts::BlockInputs make_inputs(const std::string& preset, uint64_t seed) {
  ts::BlockInputs in;
  in.config = ts::preset_config(preset);
  const auto& c = in.config;
  const int64_t S = c.tokens(), M = c.hidden, H = c.heads, D = c.head_dim, F = c.ffn_hidden;
  Rng r(seed);
  in.x = fill({S, M}, r, 2.0);
  const int64_t R = c.grid_t + 1;  // one row per latent frame, one for conditioning
  in.modulation = fill({R, 6, M}, r, 0.3);
  for (int64_t s = 0; s < S; ++s) {
    const int64_t f = c.frame_of_token(s);
    in.modulation_row.push_back(static_cast<int32_t>(f < 0 ? c.grid_t : f));
  }
  in.positions = ts::Tensor({S, 3}, ts::DType::f64);
  for (int64_t s = 0; s < S; ++s) {
    const int64_t hw = c.grid_h * c.grid_w;
    double* p = in.positions.ptr() + 3 * s;
    if (s < c.video_tokens()) {
      p[0] = static_cast<double>(s / hw);
      p[1] = static_cast<double>((s % hw) / c.grid_w);
      p[2] = static_cast<double>(s % c.grid_w);
    } else {
      p[0] = 0.25 * static_cast<double>(s - c.video_tokens());
    }
  }
  auto lin = [&](int64_t out, int64_t in_dim) {
    return fill({out, in_dim}, r, std::sqrt(3.0 / static_cast<double>(in_dim)));
  };
  in.weights["norm1_w"] = fill({M}, r, 0.2, 1.0);
  in.weights["norm2_w"] = fill({M}, r, 0.2, 1.0);
  in.weights["q_norm"] = fill({D}, r, 0.2, 1.0);
  in.weights["k_norm"] = fill({D}, r, 0.2, 1.0);
  in.weights["w_qkv"] = lin(3 * H * D, M);
  in.weights["w_out"] = lin(M, H * D);
  in.weights["w_fc1"] = lin(2 * F, M);
  in.weights["w_fc2"] = lin(M, F);
  return in;
}

}  // namespace blocktest
