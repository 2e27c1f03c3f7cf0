#include "reference/rms_norm.hpp"

#include <cmath>

namespace ts {

void rms_norm(const double* x, int64_t n, const double* w, double eps, double* out) {
  double ss = 0.0;
  for (int64_t i = 0; i < n; ++i) ss += x[i] * x[i];
  const double inv = 1.0 / std::sqrt(ss / static_cast<double>(n) + eps);
  for (int64_t i = 0; i < n; ++i) out[i] = x[i] * inv * (w ? w[i] : 1.0);
}

}  // namespace ts
