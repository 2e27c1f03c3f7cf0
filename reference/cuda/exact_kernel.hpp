#pragma once
// The boundary between nvcc-compiled code and the rest: plain types only, so
// the .cu file stays free of the project's heavier headers.
#include <string>

namespace ts::cuda {

// True when a CUDA device can be used; otherwise `why` says why not.
bool device_available(std::string* why);

// out[S*H*D] = softmax(q k^T * scale) v per head, all [S, H, D] contiguous
// float64 host arrays. Returns an empty string, or the CUDA error.
std::string exact_attention_fp64(const double* q, const double* k, const double* v, double* out,
                                 long long S, long long H, int D, double scale);

inline constexpr int kExactMaxHeadDim = 256;

}  // namespace ts::cuda
