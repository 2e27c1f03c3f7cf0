#include "reference/rope.hpp"

#include "core/error.hpp"
#include "reference/numerics/detmath.hpp"

namespace ts {

Rope::Rope(const BlockConfig& c) : D_(c.head_dim), F_(c.rope_freqs_per_axis) {
  if (c.rope_rot_dims % 6 != 0 || c.rope_rot_dims / 6 != c.rope_freqs_per_axis)
    throw InputError("rope: rope_freqs_per_axis (" + std::to_string(c.rope_freqs_per_axis) +
                     ") must equal rope_rot_dims / 6 (rope_rot_dims " +
                     std::to_string(c.rope_rot_dims) + ")");
  if (c.rope_rot_dims > c.head_dim)
    throw InputError("rope: rope_rot_dims exceeds head_dim");
  inv_freq_.resize(static_cast<size_t>(F_));
  for (int64_t i = 0; i < F_; ++i)
    inv_freq_[static_cast<size_t>(i)] =
        detmath::pow(c.rope_theta, -static_cast<double>(i) / static_cast<double>(F_));
}

void Rope::apply(double* row, const double pos[3]) const {
  for (int a = 0; a < 3; ++a) {
    double* base = row + 2 * F_ * a;
    for (int64_t i = 0; i < F_; ++i) {
      double s, c;
      detmath::sincos(pos[a] * inv_freq_[static_cast<size_t>(i)], &s, &c);
      const double x1 = base[i], x2 = base[i + F_];
      base[i] = x1 * c - x2 * s;
      base[i + F_] = x2 * c + x1 * s;
    }
  }
}

}  // namespace ts
