#include "kernels_under_test/registry.hpp"

#include "core/error.hpp"
#include "kernels_under_test/plugin_backend.hpp"
#include "kernels_under_test/stored_output.hpp"
#include "reference/attention_exact.hpp"
#include "reference/attention_sage2.hpp"
#include "reference/sage2_presets.hpp"
#include "reference/attention_sol.hpp"
#include "reference/backend_params.hpp"
#ifdef TOUCHSTONE_HAVE_CUDA
#include "reference/cuda/attention_exact.hpp"
#include "reference/cuda/attention_sage2.hpp"
#include "reference/cuda/attention_sol.hpp"
#include "reference/cuda/block.hpp"
#endif

namespace ts {

namespace {

// The attention backend kinds, once: name, what it is, and whether it is an
// emulation (it computes what a kernel would, at a speed no kernel has, so it
// is never speed evidence unless a gate asks: GateFile::time_emulations).
struct BackendKind {
  std::string name, description;
  bool emulation;
  bool exact_reference;  // computes exact attention: its error against exact is 0 or rounding
};

const std::vector<BackendKind>& backend_kind_table() {
  static const std::vector<BackendKind> kinds = {
      {"exact", "float64 reference attention (precision=fp64|fp32)", true, true},
      {"sage2", "SageAttention 2.2.0 emulation (preset=" + sage2_preset_names("|") + ", any knob key=value)", true, false},
      {"sol", "routed block-sparse attention (tau=1.3, precision=bf16|int8_qk|int8_qk_pv, ...)", true, false},
#ifdef TOUCHSTONE_HAVE_CUDA
      {"exact_cuda", "float64 reference attention on the CUDA device (this build has CUDA)", true, true},
      {"sage2_cuda", "the sage2 emulation with its attention on the CUDA device, the host's bits "
                     "(the knobs of sage2; quantised pipeline only)", true, false},
      {"sol_cuda", "the sol emulation with its attention on the CUDA device: the host's routing; the host's "
                   "bits for int8_qk_pv, within summation order for bf16 and int8_qk (the knobs of sol)", true, false},
#endif
      {"stored", "an output stored in the fixture: stored:NAME reads /outputs/NAME/attention "
                 "(stored:observed reads /attention/observed) and /timings/NAME", false, false},
      {"plugin", "a kernel under test in a shared library (touchstone_kernel.h): plugin:PATH.so,key=value "
                 "(keys go to the plugin; docs/plugins.md)", false, false},
  };
  return kinds;
}

// The kind of a spec: what stands before the first ':' or ','.
std::string spec_kind(const std::string& spec) { return spec.substr(0, spec.find_first_of(":,")); }

}  // namespace

std::vector<std::pair<std::string, std::string>> attention_backend_kinds() {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& k : backend_kind_table()) out.emplace_back(k.name, k.description);
  return out;
}

bool is_emulation_spec(const std::string& spec) {
  const std::string kind = spec_kind(spec);
  for (const auto& k : backend_kind_table())
    if (k.name == kind) return k.emulation;
  return false;
}

bool is_exact_reference_spec(const std::string& spec) {
  const std::string kind = spec_kind(spec);
  for (const auto& k : backend_kind_table())
    if (k.name == kind) return k.exact_reference;
  return false;
}

std::unique_ptr<AttentionBackend> make_attention_backend(const std::string& spec,
                                                         const BackendContext& ctx) {
  // stored:NAME takes a name, not key=value pairs.
  if (spec.rfind("stored:", 0) == 0) return make_stored_backend(spec.substr(7), ctx.fixture_path);
  // plugin:PATH takes a path first, then the plugin's own key=value pairs.
  if (spec == "plugin" || spec.rfind("plugin:", 0) == 0) return make_plugin_backend(spec, ctx);
  BackendParams p = BackendParams::parse(spec);
  if (p.kind() == "exact") return make_exact_backend(p);
  if (p.kind() == "sage2") return make_sage2_backend(p);
  if (p.kind() == "sol") return make_sol_backend(p);
#ifdef TOUCHSTONE_HAVE_CUDA
  if (p.kind() == "exact_cuda") return cuda::make_exact_backend(p);
  if (p.kind() == "sage2_cuda") return cuda::make_sage2_backend(p);
  if (p.kind() == "sol_cuda") return cuda::make_sol_backend(p);
#endif
  std::string kinds;
  for (const auto& [k, d] : attention_backend_kinds()) kinds += (kinds.empty() ? "" : ", ") + k;
  throw InputError("unknown backend '" + p.kind() + "' in '" + spec + "' (known: " + kinds + ")");
}

const std::vector<BlockBackendKind>& block_backend_kinds() {
  static const std::vector<BlockBackendKind> kinds = {
      {"block", "the block reference on the host", &run_block, false},
#ifdef TOUCHSTONE_HAVE_CUDA
      {"block_cuda", "the block on the CUDA device: the host's bits for nvfp4 and bf16 linears, fp64 within "
                     "rounding (cuBLAS DGEMM); attention through the backend given (exact_cuda, sage2_cuda, ...)",
       &cuda::run_block, true},
#endif
  };
  return kinds;
}

const BlockBackendKind& block_backend(const std::string& name) {
  std::string known;
  for (const auto& k : block_backend_kinds()) {
    if (k.name == name) return k;
    known += (known.empty() ? "" : ", ") + k.name;
  }
  throw InputError("unknown block backend '" + name + "' (known in this build: " + known + ")");
}

}  // namespace ts
