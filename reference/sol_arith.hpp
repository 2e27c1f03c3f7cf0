#pragma once
// The float32 exp of the sol emulation's softmax, shared by the host emulation
// (attention_sol.cpp) and its CUDA mirror (cuda/attention_sol.cu, built with
// -fmad=false), so that both give the same bits.
#include "reference/numerics/detmath.hpp"
#include "reference/numerics/host_device.hpp"

namespace ts::sol {

TS_HD inline float expf_det(float x) { return static_cast<float>(detmath::exp(static_cast<double>(x))); }

}  // namespace ts::sol
