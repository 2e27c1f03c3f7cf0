#pragma once
// The figures `touchstone triage` localises an error with (docs/triage.md):
// the worst elements with their coordinates, the non-finite positions as
// runs, 2-D maps of rel_l2 and gain (head x query block, head x frame,
// frame x spatial tile), and the telescoped decomposition of an error into
// parts. Metrics-level only: tensors and the block's geometry in, JSON out.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/block_config.hpp"
#include "core/tensor.hpp"

namespace ts {

// Where packed token s lies: its segment and, for video tokens, the latent
// (t, h, w) under config.token_order (thw raster or tile:TTxTHxTW with full
// tiles, as BlockConfig::frame_of_token reads it); t = h = w = -1 otherwise.
struct TokenPlace {
  std::string segment;
  bool video = false;
  int64_t t = -1, h = -1, w = -1;
};
TokenPlace token_place(const BlockConfig& config, int64_t s);

// The n elements of [S, H, D] `cand` farthest from `exact` in absolute value
// (finite ones; ties by index), with their coordinates and the candidate's,
// exact's and (when given) the baseline's values.
nlohmann::json worst_elements(const Tensor& cand, const Tensor& exact, const Tensor* baseline,
                              const BlockConfig& config, size_t n);

// Every non-finite position of `cand`, as runs of consecutive tokens per head
// ({head, tokens [first, last], elements, channels (first 8)}), plus the
// first `list` positions one by one with their coordinates.
nlohmann::json nonfinite_runs(const Tensor& cand, const BlockConfig& config, size_t list = 20);

// A 2-D map: rows x cols cells, each with rel_l2 and gain (a·b/||b||²) of
// the cells' elements; undefined cells (no elements, ||b|| = 0) are null.
struct ErrorMap {
  std::string name, row_axis, col_axis;
  std::vector<std::string> rows, cols;
  std::vector<std::optional<double>> rel_l2, gain;  // row-major
  std::vector<int64_t> count;
  nlohmann::json to_json() const;
};
// head x query block (query_block tokens), head x latent frame (cond as one
// more column), frame x spatial tile (tile_h x tile_w latent positions;
// video tokens only). Tiles default to a side that gives at most 8 x 8.
std::vector<ErrorMap> error_maps(const Tensor& cand, const Tensor& ref, const BlockConfig& config,
                                 int64_t query_block = 128);

// The `n` worst cells of each map: ranked by rel_l2 over the floor map's
// cell (the baseline's own map against the same reference) when given,
// else by rel_l2; and by |gain - 1|. Each with the floor's figure and the ratio.
nlohmann::json rank_cells(const std::vector<ErrorMap>& maps, const std::vector<ErrorMap>* floor, size_t n);

// Parts e_1..e_n of an error e = cand - exact whose vector sum is e exactly
// (telescoped: e_i = o_i - o_{i-1}, o_0 = exact, o_n = cand; docs/triage.md).
// Per part: ||e_i|| / ||exact||, its share <e_i, e> / ||e||² (shares sum to 1),
// the cross terms 2<e_i, e_j> / ||exact||², and how far Σ e_i is from e.
struct ErrorChain {
  std::vector<std::string> names;
  std::vector<const Tensor*> outputs;  // o_1..o_n; o_n is the candidate
};
nlohmann::json decompose_chain(const Tensor& exact, const ErrorChain& chain);

// One-at-a-time switches: e_full = e_floor + Σ_X c_X + interaction with
// c_X = full - without_X and e_floor = floor - exact; shares <., e_full> / ||e_full||².
nlohmann::json decompose_one_off(const Tensor& exact, const Tensor& full, const Tensor& floor,
                                 const std::vector<std::pair<std::string, const Tensor*>>& without);

// Per (head, query block) ||a - b|| / ||ref|| over the cell, row-major [H][QB].
std::vector<double> cell_norm_ratio(const Tensor& a, const Tensor& b, const Tensor& ref, int64_t query_block);

// Pearson correlation of two equal-length series; nullopt when either is constant or short.
std::optional<double> pearson(const std::vector<double>& x, const std::vector<double>& y);

}  // namespace ts
