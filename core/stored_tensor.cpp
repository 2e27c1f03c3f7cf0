#include "core/stored_tensor.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/error.hpp"

namespace ts {
namespace {

double from_bf16(uint16_t b) {
  const uint32_t u = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// IEEE binary16 to double, exactly (subnormals, infinities and NaN included).
double from_f16(uint16_t h) {
  const int sign = (h >> 15) ? -1 : 1;
  const int e = (h >> 10) & 0x1f;
  const int m = h & 0x3ff;
  if (e == 0x1f) return m ? std::nan("") : sign * HUGE_VAL;
  if (e == 0) return sign * std::ldexp(static_cast<double>(m), -24);
  return sign * std::ldexp(static_cast<double>(m | 0x400), e - 25);
}

void convert(DType t, const unsigned char* p, int64_t n, double* out, int64_t stride) {
  switch (t) {
    case DType::bf16: {
      if (stride == 1) {  // a loop the compiler turns into vector shifts and conversions
        for (int64_t i = 0; i < n; ++i) {
          uint16_t b;
          std::memcpy(&b, p + 2 * i, 2);
          const uint32_t u = static_cast<uint32_t>(b) << 16;
          float f;
          std::memcpy(&f, &u, sizeof f);
          out[i] = f;
        }
        return;
      }
      uint16_t v[256];
      for (int64_t i = 0; i < n; i += 256) {
        const int64_t m = std::min<int64_t>(256, n - i);
        std::memcpy(v, p + 2 * i, static_cast<size_t>(m) * 2);
        for (int64_t j = 0; j < m; ++j) out[(i + j) * stride] = from_bf16(v[j]);
      }
      return;
    }
    case DType::f16:
      for (int64_t i = 0; i < n; ++i) {
        uint16_t v;
        std::memcpy(&v, p + 2 * i, 2);
        out[i * stride] = from_f16(v);
      }
      return;
    case DType::f32: {
      float v[256];
      for (int64_t i = 0; i < n; i += 256) {
        const int64_t m = std::min<int64_t>(256, n - i);
        std::memcpy(v, p + 4 * i, static_cast<size_t>(m) * 4);
        for (int64_t j = 0; j < m; ++j) out[(i + j) * stride] = v[j];
      }
      return;
    }
    case DType::f64:
      if (stride == 1) {
        std::memcpy(out, p, static_cast<size_t>(n) * 8);
      } else {
        for (int64_t i = 0; i < n; ++i) std::memcpy(out + i * stride, p + 8 * i, 8);
      }
      return;
    case DType::i8:
      for (int64_t i = 0; i < n; ++i) out[i * stride] = static_cast<int8_t>(p[i]);
      return;
    case DType::u8:
      for (int64_t i = 0; i < n; ++i) out[i * stride] = p[i];
      return;
    case DType::i32:
      for (int64_t i = 0; i < n; ++i) {
        int32_t v;
        std::memcpy(&v, p + 4 * i, 4);
        out[i * stride] = v;
      }
      return;
    case DType::i64:
      for (int64_t i = 0; i < n; ++i) {
        int64_t v;
        std::memcpy(&v, p + 8 * i, 8);
        if (v > (int64_t(1) << 53) || v < -(int64_t(1) << 53))
          throw InputError("int64 value " + std::to_string(v) + " is beyond 2^53 (not exactly representable)");
        out[i * stride] = static_cast<double>(v);
      }
      return;
  }
}

}  // namespace

int64_t StoredTensor::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

void StoredTensor::to_double(int64_t first, int64_t n, double* out, int64_t stride) const {
  if (n <= 0) return;
  const size_t esize = dtype == DType::bf16 || dtype == DType::f16 ? 2 : static_cast<size_t>(dtype_bytes(dtype));
  // The span holding `first`: the last that starts at or before it.
  auto it = std::upper_bound(spans.begin(), spans.end(), first,
                             [](int64_t x, const Span& s) { return x < s.first; });
  if (it == spans.begin()) throw InternalError("StoredTensor: element before the first span");
  --it;
  while (n > 0) {
    if (it == spans.end() || first < it->first || first >= it->first + it->count)
      throw InternalError("StoredTensor: spans do not cover element " + std::to_string(first));
    const int64_t take = std::min(n, it->first + it->count - first);
    convert(dtype, it->bytes + static_cast<size_t>(first - it->first) * esize, take, out, stride);
    first += take;
    out += take * stride;
    n -= take;
    ++it;
  }
}

const unsigned char* StoredTensor::bytes_of(int64_t first, int64_t n) const {
  auto it = std::upper_bound(spans.begin(), spans.end(), first,
                             [](int64_t x, const Span& s) { return x < s.first; });
  if (it == spans.begin()) return nullptr;
  --it;
  if (first + n > it->first + it->count) return nullptr;
  const size_t esize = dtype == DType::bf16 || dtype == DType::f16 ? 2 : static_cast<size_t>(dtype_bytes(dtype));
  return it->bytes + static_cast<size_t>(first - it->first) * esize;
}

void TensorRef::fill(int64_t first, int64_t n, double* out, int64_t stride) const {
  if (stored_) return stored_->to_double(first, n, out, stride);
  const double* p = dense_->data.data() + first;
  for (int64_t i = 0; i < n; ++i) out[i * stride] = p[i];
}

std::string TensorRef::shape_string() const {
  std::string s = "[";
  const auto& sh = shape();
  for (size_t i = 0; i < sh.size(); ++i) s += (i ? ", " : "") + std::to_string(sh[i]);
  return s + "]";
}

}  // namespace ts
