#pragma once
// The exact attention reference (docs/emulation.md "The exact reference"): inputs as
// float64, softmax with a running max, float64 accumulation, over the whole
// packed sequence (every query attends to every key of every segment). Reads
// BSHD in place and streams over query and key blocks, so it never holds an
// S x S matrix. Work is split over (head, query block) and each task runs in a
// fixed order, so the result has the same bits at any thread count.
#include <memory>

#include "reference/attention_problem.hpp"
#include "reference/backend_params.hpp"

namespace ts {

enum class ExactPrecision {
  fp64,  // float64 products and sums (the default)
  fp32,  // float32 scores and P·V within a key block, float64 across blocks
};

struct ExactOptions {
  ExactPrecision precision = ExactPrecision::fp64;
  int64_t block_q = 128;
  int64_t block_k = 256;
};

// out: [S, H, D] float64.
AttentionResult attention_exact(const AttentionProblem& problem, const ExactOptions& opts = {});

// kind "exact": precision=fp64|fp32.
std::unique_ptr<AttentionBackend> make_exact_backend(BackendParams& params);

}  // namespace ts
