#pragma once
// The transformer block of block.md, stage by stage, with every stage's output
// kept so that a captured run can be compared with it stage for stage.
//
// Linear modes (docs/block.md "Where rounding happens" is the full definition):
//   fp64  : float64 everywhere, no rounding (the exact block).
//   bf16  : bf16 weights and activations, float32 arithmetic inside a stage,
//           every stage output rounded once to bf16 (the production dtype).
//   nvfp4 : as bf16, but the four linears are NVFP4 GEMMs (te | modelopt recipe).
// The attention stage is whatever AttentionBackend the caller passes (exact,
// sage2 preset, sol variant), so the reference does not depend on kernels.
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/block_config.hpp"
#include "core/block_stage_table.hpp"
#include "core/tensor.hpp"
#include "reference/attention_problem.hpp"

namespace ts {

enum class LinearMode { fp64, bf16, nvfp4 };
LinearMode linear_mode_from_name(const std::string& name);  // throws InputError
const char* linear_mode_name(LinearMode mode);


// Indices into the six modulation vectors of a row of /block/modulation.
enum ModIndex : int { kShiftMsa = 0, kScaleMsa, kGateMsa, kShiftMlp, kScaleMlp, kGateMlp };

// What /block of a fixture holds as inputs (docs/fixture-format.md).
struct BlockInputs {
  BlockConfig config;
  Tensor x;                             // [S, M]
  Tensor modulation;                    // [R, 6, M]
  std::vector<int32_t> modulation_row;  // [S]; empty when R == 1
  Tensor positions;                     // [S, 3] (t, h, w)
  // norm1_w, norm2_w [M], w_qkv [3HD, M], q_norm, k_norm [D], w_out [M, HD],
  // w_fc1 [2F, M], w_fc2 [M, F]; optional biases b_qkv [3HD], b_out [M],
  // b_fc1 [2F], b_fc2 [M].
  std::map<std::string, Tensor> weights;

  int64_t tokens() const { return x.rank() > 0 ? x.dim(0) : 0; }
  int64_t rows() const { return modulation.rank() > 0 ? modulation.dim(0) : 0; }
  // Row of /block/modulation that token s uses.
  int64_t row_of(int64_t s) const {
    return modulation_row.empty() ? 0 : static_cast<int64_t>(modulation_row[static_cast<size_t>(s)]);
  }
  // modulation[row_of(s), which, :]
  const double* mod(int64_t s, int which) const {
    return modulation.ptr() + (row_of(s) * 6 + which) * config.hidden;
  }
  const Tensor& weight(const std::string& name) const;        // throws InputError when absent
  const Tensor* bias(const std::string& name) const;          // nullptr when absent
  // Every shape against config; modulation_row in [0, R). Throws InputError.
  void validate(const std::string& where) const;
};

// Builds BlockInputs from the map Fixture::block holds ("x", "modulation",
// "modulation_row", "positions", "weights/<name>"), moving the tensors out.
BlockInputs block_inputs_from_map(const BlockConfig& config, std::map<std::string, Tensor>&& block,
                                  const std::string& where);

struct BlockOptions {
  LinearMode linear = LinearMode::fp64;
  std::string recipe = "te";      // nvfp4 only: te | modelopt
  int64_t chunk_tokens = 32;      // tokens per work item of the streamed stages
  // Which stage outputs to keep in BlockResult::stages (empty: all). Stages a
  // later stage needs are held only as long as they are needed.
  std::vector<std::string> keep;
};

// Output group name of a run: "block_fp64_exact", "block_nvfp4-te_sage2_<preset>";
// the device mirror's (block_backend "block_cuda") "block_cuda_fp64_exact_cuda".
std::string block_output_name(const BlockOptions& opts, const std::string& attention_name,
                              const std::string& block_backend = "block");
nlohmann::json block_params(const BlockOptions& opts, const AttentionBackend& attention,
                            const std::string& block_backend = "block");

struct BlockResult {
  std::map<std::string, Tensor> stages;   // by stage name
  std::map<std::string, double> stage_ms; // wall time of each stage
  double total_ms = 0;
  // The device mirror (reference/cuda/block.hpp): copies between host and
  // device outside the stages (inputs up, kept stages down); 0 on the host.
  double transfer_ms = 0;
  nlohmann::json attention_stats = nlohmann::json::object();
};

// One forward pass. Throws InputError on inputs that disagree with config.
BlockResult run_block(const BlockInputs& in, AttentionBackend& attention, const BlockOptions& opts);

}  // namespace ts
