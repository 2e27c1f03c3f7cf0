#pragma once
// A tensor's elements as a file stores them (bfloat16 and float16 as their
// 16-bit patterns, little-endian), left where they lie: in the page cache
// through a read-only mapping of the file (fixtures/read_stored.hpp), or in
// memory. Readers that only reduce (the metric passes) convert it tile by
// tile through TensorRef, so a block24 output costs its 542 stored MB, not
// 2.2 GB of doubles written once and read once.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/tensor.hpp"

namespace ts {

struct StoredTensor {
  // Consecutive elements at consecutive bytes (a chunk of an HDF5 dataset,
  // or the whole of it).
  struct Span {
    int64_t first = 0, count = 0;
    const unsigned char* bytes = nullptr;
  };
  std::vector<int64_t> shape;
  DType dtype = DType::f64;
  std::vector<Span> spans;   // ascending by first, covering [0, numel) without gaps
  std::shared_ptr<const void> owner;  // keeps the mapping (or buffer) alive

  int64_t numel() const;
  int rank() const { return static_cast<int>(shape.size()); }
  int64_t dim(int i) const { return shape.at(static_cast<size_t>(i)); }
  // Elements [first, first + n) converted to double, exactly (an int64
  // beyond 2^53 is an InputError).
  // stride: out[i * stride] receives element first + i.
  void to_double(int64_t first, int64_t n, double* out, int64_t stride = 1) const;
  // Elements [first, first + n) as stored, where one span holds them all; else null.
  const unsigned char* bytes_of(int64_t first, int64_t n) const;
};

// What a metric pass reads: a tensor of doubles, or a stored one converted
// on the way. Cheap to copy; refers, never owns.
class TensorRef {
 public:
  TensorRef(const Tensor& t) : dense_(&t) {}  // NOLINT: both convert implicitly
  TensorRef(const StoredTensor& t) : stored_(&t) {}  // NOLINT

  const std::vector<int64_t>& shape() const { return dense_ ? dense_->shape : stored_->shape; }
  DType dtype() const { return dense_ ? dense_->dtype : stored_->dtype; }
  int64_t numel() const { return dense_ ? dense_->numel() : stored_->numel(); }
  int rank() const { return static_cast<int>(shape().size()); }
  int64_t dim(int i) const { return shape().at(static_cast<size_t>(i)); }
  std::string shape_string() const;
  // Elements [first, first + n) as doubles: a pointer into the tensor's own
  // values, or `scratch` (room for n) filled with them.
  const double* values(int64_t first, int64_t n, double* scratch) const {
    if (dense_) return dense_->data.data() + first;
    stored_->to_double(first, n, scratch);
    return scratch;
  }
  // Elements [first, first + n) into out[0], out[stride], ...: how the metric
  // passes lay four stretches side by side, one vector load per element.
  void fill(int64_t first, int64_t n, double* out, int64_t stride) const;
  // Elements [first, first + n) as bfloat16 bit patterns where the tensor is stored so
  // and one span holds them (a pass that reads the bits itself); else null.
  // (Bytes, not uint16_t: a file need not align its data.)
  const unsigned char* bf16_bytes(int64_t first, int64_t n) const {
    if (!stored_ || stored_->dtype != DType::bf16) return nullptr;
    return stored_->bytes_of(first, n);
  }
  bool is_stored() const { return stored_ != nullptr; }
  // Whether a dense tensor holds as many values as its shape says.
  bool sized() const { return !dense_ || static_cast<int64_t>(dense_->data.size()) == dense_->numel(); }

 private:
  const Tensor* dense_ = nullptr;
  const StoredTensor* stored_ = nullptr;
};

// A tensor that arrives either way (a stored backend's output, or one
// computed), for code that judges both alike.
struct HeldTensor {
  Tensor dense;
  std::optional<StoredTensor> stored;
  TensorRef ref() const { return stored ? TensorRef(*stored) : TensorRef(dense); }
};

}  // namespace ts
