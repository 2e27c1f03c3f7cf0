#pragma once
// The host side of StoredInput (stored_input.hpp): what a device mirror uploads for one of q, k, v.
#include <vector>

#include "core/stored_tensor.hpp"
#include "core/tensor.hpp"
#include "reference/cuda/stored_input.hpp"

namespace ts::cuda {

// A stored bf16, fp16 or float32 tensor's pieces where they lie; anything else (values in memory,
// float64 stored) as one float32 copy made here, the host quantisers' own conversion
// (sage2::to_head_major's static_cast<float>), so the device sees the floats the host would.
class InputForDevice {
 public:
  InputForDevice(const BSHDView& view, const StoredTensor* stored);
  InputForDevice(const InputForDevice&) = delete;
  InputForDevice& operator=(const InputForDevice&) = delete;
  const StoredInput& input() const { return input_; }

 private:
  std::vector<StoredPiece> pieces_;
  std::vector<float> copy_;
  StoredInput input_;
};

// The smoothing mean's factor and rounding as sage2::smoothing_mean forms them on the host (f32(1/S),
// the input dtype: sage2_quant.cuh Round), for the device quantisers of sage2_cuda and sol_cuda.
struct SmoothingMean {
  float inv_s;
  int km_round;
};
SmoothingMean smoothing_mean_for(int64_t S, DType input_dtype);

}  // namespace ts::cuda
