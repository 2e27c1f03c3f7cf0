#pragma once
// Rotary embedding over three axes (t, h, w) as block.md defines it: F =
// rope_rot_dims / 6 frequencies per axis, inv_freq_i = theta^(-i/F); axis a
// owns channels [2Fa, 2Fa + 2F), where channel i pairs with i + F
// (rotate-half); channels past rope_rot_dims pass through.
#include <cstdint>
#include <vector>

#include "core/block_config.hpp"

namespace ts {

class Rope {
 public:
  explicit Rope(const BlockConfig& config);  // throws InputError on a bad geometry
  // Rotates one head's contiguous row of head_dim channels in place.
  void apply(double* row, const double pos[3]) const;
  int64_t freqs_per_axis() const { return F_; }
  const std::vector<double>& inv_freq() const { return inv_freq_; }

 private:
  int64_t D_ = 0, F_ = 0;
  std::vector<double> inv_freq_;
};

}  // namespace ts
