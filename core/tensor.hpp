#pragma once
// The currency between modules: a dense row-major tensor of doubles that
// remembers the element type it is stored as. Every storage type touchstone
// handles (bf16, fp16, f32, int8, ...) converts to double exactly, so one
// element type in memory serves inputs, emulations and the exact reference.
#include <cstdint>
#include <string>
#include <vector>

namespace ts {

enum class DType { bf16, f16, f32, f64, i8, u8, i32, i64 };
// Every element type, in the enum's order (what `touchstone tables` lists).
inline constexpr DType kDTypes[] = {DType::bf16, DType::f16, DType::f32, DType::f64,
                                    DType::i8,   DType::u8,  DType::i32, DType::i64};

const char* dtype_name(DType t);
DType dtype_from_name(const std::string& name);  // throws InputError
// Bytes of one element as stored in a fixture.
int dtype_bytes(DType t);

struct Tensor {
  std::vector<int64_t> shape;
  DType dtype = DType::f64;  // what the values are exactly representable in
  std::vector<double> data;

  Tensor() = default;
  Tensor(std::vector<int64_t> shape_, DType dtype_);  // zero-filled

  int64_t numel() const;
  int rank() const { return static_cast<int>(shape.size()); }
  int64_t dim(int i) const { return shape.at(static_cast<size_t>(i)); }
  double* ptr() { return data.data(); }
  const double* ptr() const { return data.data(); }
  std::string shape_string() const;  // "[832, 4, 128]"
};

// A strided read-only view of rank 3 in (token, head, channel) order, so BSHD
// tensors are read where they lie, without a transposed copy.
struct BSHDView {
  const double* p = nullptr;
  int64_t S = 0, H = 0, D = 0;
  int64_t sS = 0, sH = 0, sD = 1;  // strides in elements

  static BSHDView of(const Tensor& t);  // t must be [S, H, D]; throws InputError
  const double& operator()(int64_t s, int64_t h, int64_t d) const {
    return p[s * sS + h * sH + d * sD];
  }
  // Row of one token and head: D elements with stride sD.
  const double* row(int64_t s, int64_t h) const { return p + s * sS + h * sH; }
};

}  // namespace ts
