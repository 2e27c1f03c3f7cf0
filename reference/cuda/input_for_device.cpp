#include "reference/cuda/input_for_device.hpp"

#include "reference/zero_tensor.hpp"

namespace ts::cuda {

SmoothingMean smoothing_mean_for(int64_t S, DType input_dtype) {
  return {1.0f / static_cast<float>(S), input_dtype == DType::bf16 ? 0 : input_dtype == DType::f16 ? 1 : 2};
}

InputForDevice::InputForDevice(const BSHDView& view, const StoredTensor* stored) {
  const int type = !stored                        ? -1
                   : stored->dtype == DType::bf16 ? 0
                   : stored->dtype == DType::f16  ? 1
                   : stored->dtype == DType::f32  ? 2
                                                  : -1;
  if (type >= 0) {
    for (const StoredTensor::Span& sp : stored->spans) pieces_.push_back({sp.first, sp.count, sp.bytes});
    input_ = {type, pieces_.data(), static_cast<long long>(pieces_.size())};
    return;
  }
  const int64_t S = view.S, H = view.H, D = view.D;
  zero_fill(copy_, static_cast<size_t>(S * H * D));
#pragma omp parallel
  {
    std::vector<double> row(view.p ? 0 : static_cast<size_t>(D));
#pragma omp for schedule(static)
    for (int64_t t = 0; t < S * H; ++t) {
      float* o = copy_.data() + t * D;
      if (view.p) {
        const double* r = view.row(t / H, t % H);
        for (int64_t d = 0; d < D; ++d) o[d] = static_cast<float>(r[d * view.sD]);
      } else {
        stored->to_double(t * D, D, row.data());
        for (int64_t d = 0; d < D; ++d) o[d] = static_cast<float>(row[static_cast<size_t>(d)]);
      }
    }
  }
  pieces_.push_back({0, S * H * D, copy_.data()});
  input_ = {2, pieces_.data(), 1};
}

}  // namespace ts::cuda
