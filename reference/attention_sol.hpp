#pragma once
// The `sol` routed attention family (docs/emulation.md "sol"): video keys in
// blocks summarised by their means, per query block a routing over video blocks, exact attention to routed blocks and to every
// conditioning token, one compensated pseudo-key per unrouted block.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "reference/attention_problem.hpp"
#include "reference/backend_params.hpp"
#include "reference/sage2_quant.hpp"

namespace ts {

// The routing dataset's `format` attribute (`--store-routing`, docs/fixture-format.md), the
// largest block_k, and the most video blocks whose starts and lengths are also stored as
// attributes (HDF5 keeps an attribute within 64 KiB): facts other languages read through
// `touchstone tables` (drivers/tables.cpp) instead of copying them.
inline constexpr const char* kSolRoutingFormat = "touchstone.sol_routing/1";
inline constexpr int64_t kSolMaxBlockK = 1024;
inline constexpr int64_t kSolRoutingAttrMaxVideoBlocks = 4096;

enum class SolSelector { zscore, topk, cdf };
enum class SolPrecision { bf16, int8_qk, int8_qk_pv };

struct SolConfig {
  double tau = 1.3;  // zscore threshold; tau <= -100 routes every block
  int64_t block_q = 128, block_k = 64;
  SolSelector selector = SolSelector::zscore;
  double topk = 0.1;  // fraction of video blocks routed (selector topk), at least one
  double cdf = 0.9;   // softmax mass of r routed (selector cdf), at least one block
  bool compensation = true;
  SolPrecision precision = SolPrecision::bf16;
  bool round_out = true;  // bf16 output; off keeps float32 (tests)
  bool dump = false;      // intermediates: route_mask, routing_r, video_blocks
  bool store_routing = false;  // res.datasets["routing"] (sol_routing_dataset)
};

const char* sol_precision_name(SolPrecision p);
const char* sol_selector_name(SolSelector s);

// A block of keys: video blocks (routed) are cut per video segment into
// block_k tokens (the last of a segment may be short); conditioning segments
// are cut the same way (never routed; int8_qk_pv's V/P scale blocks).
struct SolKeyBlock {
  int64_t start = 0, length = 0;
  bool video = true;
  int64_t video_index = -1;  // index among video blocks, -1 for conditioning
};
std::vector<SolKeyBlock> sol_key_blocks(const std::vector<Segment>& segments, int64_t block_k);

// Routing of one query block over its video blocks' scores r (size >= 1):
// 1 for routed. The largest r is always routed (first on ties).
std::vector<uint8_t> sol_route(const std::vector<double>& r, const SolConfig& cfg);

// Everything a (head, query block) task reads; the host emulation and its
// CUDA mirror (reference/cuda/attention_sol.hpp) share it, so both route
// with the same decisions.
struct SolPrepared {
  int64_t H = 0, S = 0, D = 0, QB = 0, VB = 0;
  std::vector<Segment> segments;
  std::vector<SolKeyBlock> blocks;
  std::vector<int64_t> video_block_ids;  // index into blocks of each video block
  sage2::HeadMajor q, k, v;
  std::vector<float> kbar, vbar;         // [H][VB][D]
  std::vector<double> r;                 // [H][QB][VB]
  std::vector<uint8_t> mask;             // [H][QB][VB]
  // int8 variants
  std::vector<float> km;                 // [H][D]
  sage2::Int8Tensor q8, k8;
  // int8_qk_pv: V codes per key block and channel, scale per (head, block, channel)
  std::vector<int8_t> v8;                // [H][S][D]
  std::vector<float> v8_scale;           // [H][blocks][D]
};
// InputError for shapes or knobs the emulation cannot run.
void sol_check(const AttentionProblem& problem, const SolConfig& cfg);
SolPrepared sol_prepare(const AttentionProblem& problem, const SolConfig& cfg);
// sol_prepare in its two halves: everything that does not depend on the
// routing knobs (tau, selector, topk, cdf), mask left empty; then the mask
// from r. A sweep over tau prepares once and routes per tau.
SolPrepared sol_prepare_inputs(const AttentionProblem& problem, const SolConfig& cfg);
// What of SolPrepared depends on the shapes and block sizes only (dimensions, segments, blocks),
// arrays left empty: sol_prepare_inputs starts from it, and so does the CUDA mirror, which makes
// the arrays on the device.
SolPrepared sol_layout(const AttentionProblem& problem, const SolConfig& cfg);
void sol_route_all(SolPrepared& pr, const SolConfig& cfg);
// True when sol_prepare_inputs gives the same result for both configurations.
bool sol_same_inputs(const SolConfig& a, const SolConfig& b);
// The pseudo-key of unrouted video block j of head h: k̄_j, or k̄_j − km for
// the int8 variants (the smoothing shift the real keys' logits carry).
float sol_pseudo_key(const SolPrepared& pr, const SolConfig& cfg, int64_t h, int64_t j, int64_t d);
// ln(n_j) of video block j, the pseudo-key's logit offset.
float sol_log_block_length(const SolPrepared& pr, int64_t j);
// res.stats (density, density_per_head, video_blocks, query_blocks) and, when
// cfg.dump, res.intermediates, from the routing.
void sol_finish(const SolPrepared& pr, const SolConfig& cfg, AttentionResult& res);
// The routing decisions as a dataset for /outputs/<name>/routing: uint8 [H, QB, VB], 1 where
// query block i of head h attends video key block j, with the block geometry and the
// segments as attributes (docs/fixture-format.md); real sparse kernels replay it.
ResultDataset sol_routing_dataset(const SolPrepared& pr, const SolConfig& cfg);
// The full parameter set, for the outputs' `params` attribute.
nlohmann::json sol_params(const SolConfig& cfg);
// The knobs of kind "sol" (without params.finish()); name: the output name.
SolConfig sol_config_from(BackendParams& params, std::string* name);

// Output [S, H, D] bf16 (float32 when round_out is off). stats: density,
// density_per_head, video_blocks, query_blocks. Intermediates when dump:
// route_mask [H, QB, VB] uint8, routing_r [H, QB, VB] float64 (r_ij),
// video_blocks [VB, 2] int64 (start, length).
AttentionResult sol_attention(const AttentionProblem& problem, const SolConfig& cfg);

// kind "sol": tau, block_q, block_k, selector, topk, cdf, compensation,
// precision, round_out, dump, routing.
std::unique_ptr<AttentionBackend> make_sol_backend(BackendParams& p);

}  // namespace ts
