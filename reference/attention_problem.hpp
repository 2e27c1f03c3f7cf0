#pragma once
// What every attention backend (reference emulation or kernel under test)
// receives and returns. The gate never knows which kind it is judging.
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/block_config.hpp"
#include "core/stored_tensor.hpp"
#include "core/tensor.hpp"

namespace ts {

struct AttentionProblem {
  BSHDView q, k, v;  // [S, H, D], values as the kernel receives them (bf16 in a real run)
  // The same inputs as a fixture stores them, [S, H, D] (LoadOptions::stored_inputs). Where
  // given, q.p, k.p and v.p are null: such a problem goes only to backends that read stored
  // inputs (AttentionBackend::reads_stored_inputs), which read the same values from these.
  const StoredTensor *q_stored = nullptr, *k_stored = nullptr, *v_stored = nullptr;
  DType input_dtype = DType::bf16;
  std::vector<Segment> segments;  // packed sequence; every query attends to every segment
  double softmax_scale = 0.0;
  BlockConfig config;  // geometry, for breakdowns and routing over video blocks

  // Throws InputError when q, k, v disagree with each other or the segments.
  void validate() const;
  bool stored_only() const { return q_stored != nullptr; }
};

// A problem over stored q, k, v [S, H, D] (no values in memory), with the config's segments
// and softmax scale; the tensors must outlive the problem. Validates.
AttentionProblem make_stored_attention_problem(const StoredTensor& q, const StoredTensor& k, const StoredTensor& v,
                                               DType input_dtype, const BlockConfig& config);

// Views over q, k, v [S, H, D] with the config's segments and softmax scale;
// the tensors must outlive the problem. Validates.
AttentionProblem make_attention_problem(const Tensor& q, const Tensor& k, const Tensor& v,
                                        const BlockConfig& config);

// A dataset a backend asks to be stored beside its output (/outputs/<name>/<key>).
struct ResultDataset {
  Tensor tensor;
  nlohmann::json attrs = nlohmann::json::object();
};

struct AttentionResult {
  Tensor out;                             // [S, H, D]; dtype = what the backend stores
  nlohmann::json stats = nlohmann::json::object();  // e.g. routed density per head
  std::map<std::string, Tensor> intermediates;      // for triage dumps (q int8 codes, ...)
  // Evidence other tools read back (sol routing=on: "routing", what real sparse kernels
  // execute; docs/fixture-format.md "/outputs/<name>/routing").
  std::map<std::string, ResultDataset> datasets;
};

class AttentionBackend {
 public:
  virtual ~AttentionBackend() = default;
  // Output group name under /outputs, with its distinguishing parameters
  // (docs/fixture-format.md: "sage2_<preset>", "sol_tau1.3_int8_qk").
  virtual std::string name() const = 0;
  // The full parameter set, written to the `params` attribute.
  virtual nlohmann::json params() const = 0;
  virtual AttentionResult run(const AttentionProblem& problem) = 0;
  // "cpu" or "cuda": which timer the gate pairs it with.
  virtual std::string device() const { return "cpu"; }
  // Backends that replay a stored output (stored:NAME) also replay its timing
  // samples from /timings/NAME; computed backends return nothing and are timed.
  virtual std::optional<std::vector<double>> stored_timings_ms() const { return std::nullopt; }
  // The clock those samples were taken on: the `clock` attribute of
  // /timings/NAME ("device_events", "host_steady"), "unknown" when absent.
  virtual std::string stored_timings_clock() const { return ""; }
  // The timing run of each stored sample (attributes `timing_run`, or
  // `timing_runs` for samples of several runs; docs/fixture-format.md): samples
  // of one run taken interleaved with another kernel's pair by round; samples
  // of different runs differ by run-to-run variance too. Empty when unknown.
  virtual std::vector<std::string> stored_timing_runs() const { return {}; }
  // Whether run() takes a problem of stored inputs (AttentionProblem::stored_only): backends
  // that convert the inputs to their own layout first read them from the file's bytes.
  virtual bool reads_stored_inputs() const { return false; }
  // Replays a stored output: reading it is not running a kernel, so it is
  // never timed here.
  virtual bool is_stored() const { return false; }
  // A stored backend's output as the file holds it, for readers that only
  // reduce it (the gate's metrics): no conversion to doubles. Others: none.
  virtual std::optional<StoredTensor> run_stored(const AttentionProblem& /*problem*/) { return std::nullopt; }
  // A sweep runs backends of one kind over one problem, one after another,
  // varying one knob: a backend may take from the one run before it what does
  // not depend on that knob (sol_cuda: the quantised inputs on the device), so
  // each run pays only for its own part. Outputs are those of a fresh backend.
  virtual void continue_from(AttentionBackend& /*earlier*/) {}
};

}  // namespace ts
