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

// The factories: each kind's own, reading its parameters (and finishing them:
// an unknown key is an error naming it).
std::unique_ptr<AttentionBackend> make_exact(const BackendSpec& s, const BackendContext&) {
  BackendParams p = s.params();
  return make_exact_backend(p);
}
std::unique_ptr<AttentionBackend> make_sage2(const BackendSpec& s, const BackendContext&) {
  BackendParams p = s.params();
  return make_sage2_backend(p);
}
std::unique_ptr<AttentionBackend> make_sol(const BackendSpec& s, const BackendContext&) {
  BackendParams p = s.params();
  return make_sol_backend(p);
}
#ifdef TOUCHSTONE_HAVE_CUDA
std::unique_ptr<AttentionBackend> make_exact_cuda(const BackendSpec& s, const BackendContext&) {
  BackendParams p = s.params();
  return cuda::make_exact_backend(p);
}
std::unique_ptr<AttentionBackend> make_sage2_cuda(const BackendSpec& s, const BackendContext&) {
  BackendParams p = s.params();
  return cuda::make_sage2_backend(p);
}
std::unique_ptr<AttentionBackend> make_sol_cuda(const BackendSpec& s, const BackendContext&) {
  BackendParams p = s.params();
  return cuda::make_sol_backend(p);
}
#endif
std::unique_ptr<AttentionBackend> make_stored(const BackendSpec& s, const BackendContext& ctx) {
  return make_stored_backend(s.argument(), ctx.fixture_path);
}
std::unique_ptr<AttentionBackend> make_plugin(const BackendSpec& s, const BackendContext& ctx) {
  return make_plugin_backend(s.text(), ctx);
}

std::string sol_defaults() {
  const SolConfig d;
  return "tau=" + backend_param_text(d.tau) + ",precision=bf16,selector=zscore,compensation=on,block_q=" +
         std::to_string(d.block_q) + ",block_k=" + std::to_string(d.block_k);
}

#ifdef TOUCHSTONE_HAVE_CUDA
#define TS_DEVICE_FACTORY(f) &(f)
#else
#define TS_DEVICE_FACTORY(f) nullptr
#endif

// The kinds that take key=value parameters (not a name or path first).
bool takes_name(const std::string& kind) { return kind == "stored" || kind == "plugin"; }

const AttentionBackendKind* find_kind(const std::string& name) {
  for (const auto& k : attention_backend_kind_table())
    if (k.name == name) return &k;
  return nullptr;
}

[[noreturn]] void unknown_kind(const std::string& kind, const std::string& spec) {
  std::string kinds;
  for (const auto& [k, d] : attention_backend_kinds()) kinds += (kinds.empty() ? "" : ", ") + k;
  throw InputError("unknown backend '" + kind + "' in '" + spec + "' (known: " + kinds + ")");
}

}  // namespace

const std::vector<AttentionBackendKind>& attention_backend_kind_table() {
  // name, description, emulation, exact_reference, device, dense_cpu, routes, takes_name, defaults, factory
  static const std::vector<AttentionBackendKind> kinds = {
      {"exact", "float64 reference attention (precision=fp64|fp32)", true, true, false, true, false, false,
       "precision=fp64", &make_exact},
      {"sage2", "SageAttention 2.2.0 emulation (preset=" + sage2_preset_names("|") + ", any knob key=value)", true,
       false, false, true, false, false, std::string("preset=") + sage2_default_preset().name, &make_sage2},
      {"sol", "routed block-sparse attention (tau=1.3, precision=bf16|int8_qk|int8_qk_pv, ...)", true, false, false,
       false, true, false, sol_defaults(), &make_sol},
      {"exact_cuda", "float64 reference attention on the CUDA device (this build has CUDA)", true, true, true, false,
       false, false, "precision=fp64", TS_DEVICE_FACTORY(make_exact_cuda)},
      {"sage2_cuda",
       "the sage2 emulation with its attention on the CUDA device, the host's bits "
       "(the knobs of sage2; quantised pipeline only)",
       true, false, true, false, false, false, std::string("preset=") + sage2_default_preset().name,
       TS_DEVICE_FACTORY(make_sage2_cuda)},
      {"sol_cuda",
       "the sol emulation with its attention on the CUDA device: the host's routing; the host's "
       "bits for int8_qk_pv, within summation order for bf16 and int8_qk (the knobs of sol)",
       true, false, true, false, true, false, sol_defaults(), TS_DEVICE_FACTORY(make_sol_cuda)},
      {"stored",
       "an output stored in the fixture: stored:NAME reads /outputs/NAME/attention "
       "(stored:observed reads /attention/observed) and /timings/NAME",
       false, false, false, false, false, true, "", &make_stored},
      {"plugin",
       "a kernel under test in a shared library (touchstone_kernel.h): plugin:PATH.so,key=value "
       "(keys go to the plugin; docs/plugins.md)",
       false, false, false, false, false, true, "", &make_plugin},
  };
  return kinds;
}

#undef TS_DEVICE_FACTORY

BackendSpec BackendSpec::parse(const std::string& text) {
  BackendSpec s;
  s.text_ = text;
  // stored:NAME takes a name, plugin:PATH a path first, then the plugin's own key=value pairs.
  const auto colon = text.find(':');
  const std::string head = text.substr(0, colon);
  if (takes_name(head) && (colon != std::string::npos || head == "plugin")) {
    s.kind_ = find_kind(head);
    if (colon != std::string::npos) {
      const std::string rest = text.substr(colon + 1);
      s.argument_ = head == "plugin" ? rest.substr(0, rest.find(',')) : rest;
    }
    return s;
  }
  s.params_ = BackendParams::parse(text);
  s.kind_ = find_kind(s.params_.kind());
  if (!s.kind_ || !s.kind_->make && !s.kind_->device) unknown_kind(s.params_.kind(), text);
  if (s.kind_->takes_name) unknown_kind(s.params_.kind(), text);  // "stored" without its name
  return s;
}

std::optional<BackendSpec> BackendSpec::try_parse(const std::string& text) {
  try {
    return parse(text);
  } catch (const InputError&) {
    return std::nullopt;
  }
}

std::unique_ptr<AttentionBackend> BackendSpec::make(const BackendContext& ctx) const {
  if (!kind_->make)
    throw InputError("backend '" + text_ + "' runs on a CUDA device, and there is none here (this build has no CUDA)");
  return kind_->make(*this, ctx);
}

std::unique_ptr<AttentionBackend> make_attention_backend(const std::string& spec, const BackendContext& ctx) {
  return BackendSpec::parse(spec).make(ctx);
}

std::vector<std::pair<std::string, std::string>> attention_backend_kinds() {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& k : attention_backend_kind_table())
    if (k.make) out.emplace_back(k.name, k.description);
  return out;
}

bool is_emulation_spec(const std::string& spec) {
  const auto s = BackendSpec::try_parse(spec);
  return s && s->is_emulation();
}

bool is_exact_reference_spec(const std::string& spec) {
  const auto s = BackendSpec::try_parse(spec);
  return s && s->is_exact_reference();
}

bool is_stored_spec(const std::string& spec) {
  const auto s = BackendSpec::try_parse(spec);
  return s && s->is_stored();
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
