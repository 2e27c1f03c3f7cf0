#pragma once
// RMSNorm as block.md uses it (norm1/norm2 over hidden, q/k norm over head_dim).
#include <cstdint>

namespace ts {

// out[i] = x[i] / sqrt(mean(x^2) + eps) * w[i], in float64; w may be null (all ones).
// out may alias x.
void rms_norm(const double* x, int64_t n, const double* w, double eps, double* out);

}  // namespace ts
