#pragma once
// One registry turns a backend spec ("sage2:preset=NAME", "sol:tau=1.3,precision=int8_qk",
// "exact", "stored:NAME", a CUDA kernel's name) into an AttentionBackend. The
// gate, the sweep and the demo make every backend here, so they never know
// whether they judge a reference emulation, a stored output or a GPU kernel.
//
// A spec is parsed once, into a BackendSpec: its kind is a row of the one kind
// table (what the kind is, the defaults of its parameters, its factory), and
// every question about a spec (stored? an emulation? on the device? dense on
// the host?) is a question to that row, never a test of the spec's text.
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "reference/attention_problem.hpp"
#include "reference/backend_params.hpp"
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

class BackendSpec;
using AttentionBackendFactory = std::unique_ptr<AttentionBackend> (*)(const BackendSpec&, const BackendContext&);

// One row of the kind table.
struct AttentionBackendKind {
  std::string name, description;
  // An emulation computes what a kernel would, at a speed no kernel has: never
  // speed evidence unless a gate asks (GateFile::time_emulations).
  bool emulation = false;
  bool exact_reference = false;  // computes exact attention: its error against exact is 0 or rounding
  bool device = false;           // runs on a CUDA device (the *_cuda mirrors)
  bool dense_cpu = false;        // dense attention on the host (exact, sage2): what the slow-run guard counts
  bool routes = false;           // the routed family (sol, sol_cuda): routing decisions to store
  bool takes_name = false;       // a name or path first (stored:NAME, plugin:PATH), not key=value pairs
  std::string defaults;          // the parameters assumed when not given ("precision=fp64"), for --help
  AttentionBackendFactory make = nullptr;  // nullptr: not in this build (a device kind without CUDA)
};
// Every kind touchstone knows, those of this build and those it lacks (make == nullptr).
const std::vector<AttentionBackendKind>& attention_backend_kind_table();

// A parsed backend spec. parse() is the only place a spec's text is read:
// InputError for a spec that is empty, malformed (key=value) or of an unknown
// kind (naming the kinds of this build).
class BackendSpec {
 public:
  static BackendSpec parse(const std::string& text);
  // nullopt where parse() would throw (a measured backend's name, a typo).
  static std::optional<BackendSpec> try_parse(const std::string& text);

  const std::string& text() const { return text_; }  // as given: what reports and repro lines show
  const AttentionBackendKind& kind() const { return *kind_; }
  const std::string& kind_name() const { return kind_->name; }
  // stored:NAME -> NAME; plugin:PATH,... -> PATH; "" for the other kinds.
  const std::string& argument() const { return argument_; }
  // The key=value parameters (kinds that take no name first).
  const BackendParams& params() const { return params_; }

  bool is_stored() const { return kind_->name == "stored"; }
  bool is_plugin() const { return kind_->name == "plugin"; }
  bool is_emulation() const { return kind_->emulation; }
  bool is_exact_reference() const { return kind_->exact_reference; }
  bool is_device() const { return kind_->device; }
  bool is_dense_cpu() const { return kind_->dense_cpu; }
  bool routes() const { return kind_->routes; }

  // The backend, through the kind's factory. InputError for bad parameters, a
  // stored output the fixture lacks, a device kind this build has no device for.
  std::unique_ptr<AttentionBackend> make(const BackendContext& ctx) const;

  bool operator==(const BackendSpec& o) const { return text_ == o.text_; }

 private:
  std::string text_, argument_;
  const AttentionBackendKind* kind_ = nullptr;
  BackendParams params_;
};

std::unique_ptr<AttentionBackend> make_attention_backend(const std::string& spec,
                                                         const BackendContext& ctx);

// Kinds of this build with a one-line description each, for --help and error messages.
std::vector<std::pair<std::string, std::string>> attention_backend_kinds();
// Whether a spec names an emulation (exact, sage2, sol and their device
// mirrors) rather than a kernel (stored:NAME, plugin:PATH): an emulation's
// time says nothing of a kernel's, so speed rules leave it out (GateFile::time_emulations).
// False for a spec that does not parse.
bool is_emulation_spec(const std::string& spec);
// Whether a spec computes exact attention (exact, exact_cuda, at any precision): a baseline of
// no error of its own, against which a bound relative to the baseline's error bounds nothing.
bool is_exact_reference_spec(const std::string& spec);
// Whether a spec reads a stored output (stored:NAME); false for a spec that does not parse.
bool is_stored_spec(const std::string& spec);

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
