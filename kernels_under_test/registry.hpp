#pragma once
// One registry turns a backend spec ("sage2:preset=NAME", "sol:tau=1.3,precision=int8_qk",
// "exact", "stored:NAME", a CUDA kernel's name) into an AttentionBackend. The
// gate, the sweep and the demo make every backend here, so they never know
// whether they judge a reference emulation, a stored output or a GPU kernel.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "reference/attention_problem.hpp"
#include "reference/block.hpp"

namespace ts {

struct BackendContext {
  BackendContext(std::string fixture = {}) : fixture_path(std::move(fixture)) {}  // implicit: {path} builds one
  std::string fixture_path;  // for stored:NAME (reads /outputs/NAME/attention, /timings/NAME)
  // plugin:PATH probes the plugin on fixture_path in a child process running
  // `probe_exe __plugin-probe` (the touchstone binary; "" = this executable).
  std::string probe_exe;
  double probe_timeout_s = 600;  // a probe still running after this is killed
};

std::unique_ptr<AttentionBackend> make_attention_backend(const std::string& spec,
                                                         const BackendContext& ctx);

// Kinds with a one-line description each, for --help and error messages.
std::vector<std::pair<std::string, std::string>> attention_backend_kinds();
// Whether a spec names an emulation (exact, sage2, sol and their device
// mirrors) rather than a kernel (stored:NAME, plugin:PATH): an emulation's
// time says nothing of a kernel's, so speed rules leave it out (GateFile::time_emulations).
bool is_emulation_spec(const std::string& spec);
// Whether a spec computes exact attention (exact, exact_cuda, at any precision): a baseline of
// no error of its own, against which a bound relative to the baseline's error bounds nothing.
bool is_exact_reference_spec(const std::string& spec);

// The block's implementations, in the same table style: "block" (the host
// reference, reference/block.hpp) and, in a build with CUDA, "block_cuda"
// (its device mirror, reference/cuda/block.hpp).
using BlockRunner = BlockResult (*)(const BlockInputs&, AttentionBackend&, const BlockOptions&);
struct BlockBackendKind {
  std::string name, description;
  BlockRunner run;
  bool device;  // needs a CUDA device
};
const std::vector<BlockBackendKind>& block_backend_kinds();
// InputError naming the known kinds for any other name.
const BlockBackendKind& block_backend(const std::string& name);

}  // namespace ts
