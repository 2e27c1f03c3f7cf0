#pragma once
// One of q, k, v as the host hands it to a device mirror (plain types: see exact_kernel.hpp).
// Its [S, H, D] elements in pieces of consecutive elements, ascending and covering them all (a
// fixture's chunks where the file's mapping holds them, or one float32 copy the host made), each
// element stored as `type`: 0 bf16, 1 fp16, 2 float32. The device widens them itself.
namespace ts::cuda {

struct StoredPiece {
  long long first = 0, count = 0;
  const void* bytes = nullptr;
};
struct StoredInput {
  int type = 2;
  const StoredPiece* pieces = nullptr;
  long long n_pieces = 0;
};

}  // namespace ts::cuda
