#include "core/tensor.hpp"

#include <sstream>

#include "core/error.hpp"

namespace ts {

const char* dtype_name(DType t) {
  switch (t) {
    case DType::bf16: return "bfloat16";
    case DType::f16: return "float16";
    case DType::f32: return "float32";
    case DType::f64: return "float64";
    case DType::i8: return "int8";
    case DType::u8: return "uint8";
    case DType::i32: return "int32";
    case DType::i64: return "int64";
  }
  throw InternalError("dtype_name: unknown dtype");
}

DType dtype_from_name(const std::string& name) {
  for (DType t : kDTypes) {
    if (name == dtype_name(t)) return t;
  }
  if (name == "bf16") return DType::bf16;
  if (name == "fp16" || name == "f16") return DType::f16;
  if (name == "fp32" || name == "f32") return DType::f32;
  if (name == "fp64" || name == "f64") return DType::f64;
  throw InputError("unknown element type '" + name +
                   "' (expected bfloat16, float16, float32, float64, int8, uint8, int32, int64)");
}

int dtype_bytes(DType t) {
  switch (t) {
    case DType::bf16:
    case DType::f16: return 2;
    case DType::f32:
    case DType::i32: return 4;
    case DType::f64:
    case DType::i64: return 8;
    case DType::i8:
    case DType::u8: return 1;
  }
  throw InternalError("dtype_bytes: unknown dtype");
}

Tensor::Tensor(std::vector<int64_t> shape_, DType dtype_)
    : shape(std::move(shape_)), dtype(dtype_) {
  data.assign(static_cast<size_t>(numel()), 0.0);
}

int64_t Tensor::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string Tensor::shape_string() const {
  std::ostringstream os;
  os << '[';
  for (size_t i = 0; i < shape.size(); ++i) os << (i ? ", " : "") << shape[i];
  os << ']';
  return os.str();
}

BSHDView BSHDView::of(const Tensor& t) {
  if (t.rank() != 3)
    throw InputError("expected a [S, H, D] tensor, got shape " + t.shape_string());
  BSHDView v;
  v.p = t.ptr();
  v.S = t.dim(0);
  v.H = t.dim(1);
  v.D = t.dim(2);
  v.sD = 1;
  v.sH = v.D;
  v.sS = v.H * v.D;
  return v;
}

}  // namespace ts
