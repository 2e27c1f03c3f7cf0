#include "kernels_under_test/plugin_backend.hpp"

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <set>

#include "core/error.hpp"
#include "core/printable.hpp"
#include "fixtures/attention_inputs.hpp"
#include "fixtures/fixture.hpp"
#include "kernels_under_test/plugin_library.hpp"
#include "kernels_under_test/plugin_probe.hpp"
#include "reference/numerics/convert.hpp"
#ifdef TOUCHSTONE_HAVE_CUDA
#include "kernels_under_test/cuda/plugin_device.hpp"
#endif

namespace ts {
namespace {

// The isolation probe's limit: the context's (600 s, room for a block24 run),
// or TOUCHSTONE_PLUGIN_PROBE_TIMEOUT_S, so that a CI job fails a hanging plugin fast.
double probe_timeout(const BackendContext& ctx) {
  const char* e = std::getenv("TOUCHSTONE_PLUGIN_PROBE_TIMEOUT_S");
  if (!e || !*e) return ctx.probe_timeout_s;
  char* end = nullptr;
  const double v = std::strtod(e, &end);
  if (end == e || *end != '\0' || !(v > 0) || !std::isfinite(v))
    throw InputError(std::string("TOUCHSTONE_PLUGIN_PROBE_TIMEOUT_S='") + e + "' is not a positive number of seconds");
  return v;
}


tsk_dtype abi_dtype(DType d) {
  switch (d) {
    case DType::bf16: return TSK_BF16;
    case DType::f16: return TSK_F16;
    case DType::f32: return TSK_F32;
    default:
      throw PluginError(std::string("the fixture's inputs are ") + dtype_name(d) +
                        "; the plugin ABI carries bf16, f16 or f32");
  }
}

DType ts_dtype(tsk_dtype d) { return d == TSK_BF16 ? DType::bf16 : d == TSK_F16 ? DType::f16 : DType::f32; }

size_t elem_bytes(tsk_dtype d) { return d == TSK_F32 ? 4 : 2; }

// A contiguous [S, H, D] copy in the ABI's dtype. The values are exactly
// representable (the fixture stores them in that dtype), so nothing rounds.
struct Packed {
  std::vector<unsigned char> bytes;
  tsk_tensor t{};
  bool finite = true;
};

Packed pack(const BSHDView& v, tsk_dtype dt) {
  Packed pk;
  const int64_t n = v.S * v.H * v.D;
  pk.bytes.resize(static_cast<size_t>(n) * elem_bytes(dt));
  bool finite = true;
  unsigned char* b = pk.bytes.data();
#pragma omp parallel for reduction(&& : finite)
  for (int64_t s = 0; s < v.S; ++s)
    for (int64_t h = 0; h < v.H; ++h)
      for (int64_t d = 0; d < v.D; ++d) {
        const float x = static_cast<float>(v(s, h, d));
        finite = finite && std::isfinite(x);
        const size_t i = static_cast<size_t>((s * v.H + h) * v.D + d);
        if (dt == TSK_F32) {
          std::memcpy(b + 4 * i, &x, 4);
        } else {
          const uint16_t bits = dt == TSK_BF16 ? num::bf16_bits(x) : num::fp16_bits(x);
          std::memcpy(b + 2 * i, &bits, 2);
        }
      }
  pk.finite = finite;
  pk.t = {pk.bytes.data(), dt, v.S, v.H, v.D, v.H * v.D, v.D, 1};
  return pk;
}

double element(const unsigned char* b, tsk_dtype dt, size_t i) {
  if (dt == TSK_F32) {
    float x;
    std::memcpy(&x, b + 4 * i, 4);
    return x;
  }
  uint16_t bits;
  std::memcpy(&bits, b + 2 * i, 2);
  return dt == TSK_BF16 ? num::bf16_from_bits(bits) : num::fp16_from_bits(bits);
}

class PluginBackend final : public AttentionBackend {
 public:
  PluginBackend(std::string spec, PluginSpec ps) : spec_(std::move(spec)), ps_(std::move(ps)) {}

  // In-process: dlopen and tsk_init; a failure is kept as this candidate's.
  void load() {
    try {
      kernel_ = std::make_unique<PluginKernel>(std::make_shared<PluginLibrary>(ps_.path), ps_.params);
    } catch (const PluginError& e) {
      error_ = e.what();
    }
  }
  void fail(std::string why) { error_ = std::move(why); }

  std::string name() const override {
    return kernel_ ? kernel_->name() : "plugin_" + std::filesystem::path(ps_.path).stem().string();
  }
  nlohmann::json params() const override {
    nlohmann::json j = {{"backend", "plugin"}, {"path", ps_.path}, {"abi_version", TSK_ABI_VERSION}};
    for (const auto& [k, v] : ps_.params) j["spec_params"][k] = v;
    if (kernel_) {
      j["plugin"] = kernel_->params();
      j["device"] = device();
    } else {
      j["error"] = error_;
    }
    return j;
  }
  std::string device() const override {
    return kernel_ && kernel_->info().device == TSK_CUDA ? "cuda" : "cpu";
  }

  AttentionResult run(const AttentionProblem& p) override {
    if (!kernel_) throw PluginError(error_);
    const tsk_dtype in_dt = abi_dtype(p.input_dtype), out_dt = kernel_->info().output_dtype;
    const Packed q = pack(p.q, in_dt), k = pack(p.k, in_dt), v = pack(p.v, in_dt);
    std::vector<unsigned char> out(static_cast<size_t>(p.q.S * p.q.H * p.v.D) * elem_bytes(out_dt), 0xFF);
    std::vector<tsk_segment> segs;
    for (const auto& s : p.segments) segs.push_back({s.name.c_str(), s.video ? 1 : 0, s.start, s.length});
    tsk_attention_args a{};
    a.q = q.t;
    a.k = k.t;
    a.v = v.t;
    a.out = {out.data(), out_dt, p.q.S, p.q.H, p.v.D, p.q.H * p.v.D, p.v.D, 1};
    a.segments = segs.data();
    a.num_segments = static_cast<int64_t>(segs.size());
    a.softmax_scale = p.softmax_scale;
    AttentionResult r;
    if (kernel_->info().device == TSK_CUDA) {
#ifdef TOUCHSTONE_HAVE_CUDA
      r.stats["clock"] = "device_events";
      r.stats["device_ms"] = cuda::run_plugin_on_device(a, [&](const tsk_attention_args& d) { kernel_->run(d); });
#else
      throw PluginError("plugin " + name() + " runs on CUDA; this touchstone was built without CUDA");
#endif
    } else {
      const auto t0 = std::chrono::steady_clock::now();
      kernel_->run(a);
      r.stats["clock"] = "host_steady";
      r.stats["host_ms"] =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    }
    r.out = Tensor({p.q.S, p.q.H, p.v.D}, ts_dtype(out_dt));
    int64_t bad = 0, first = -1;
    for (size_t i = 0; i < r.out.data.size(); ++i) {
      r.out.data[i] = element(out.data(), out_dt, i);
      if (!std::isfinite(r.out.data[i]) && bad++ == 0) first = static_cast<int64_t>(i);
    }
    // Non-finite output from finite inputs is the kernel's fault; with
    // non-finite inputs (--allow-nonfinite) the metrics judge it.
    if (bad && q.finite && k.finite && v.finite) {
      const int64_t H = p.q.H, D = p.v.D;
      throw PluginError("plugin " + name() + " returned " + std::to_string(bad) + " non-finite value(s) of " +
                        std::to_string(r.out.data.size()) + " from finite inputs (first at token " +
                        std::to_string(first / (H * D)) + ", head " + std::to_string(first / D % H) +
                        ", channel " + std::to_string(first % D) + ")");
    }
    return r;
  }

 private:
  std::string spec_;
  PluginSpec ps_;
  std::unique_ptr<PluginKernel> kernel_;
  std::string error_;
};

}  // namespace

PluginSpec parse_plugin_spec(const std::string& spec) {
  const std::string body = spec.rfind("plugin:", 0) == 0 ? spec.substr(7) : "";
  const std::string usage = " (plugin:PATH.so[,key=value...])";
  PluginSpec ps;
  std::vector<std::string> parts;
  size_t at = 0;
  for (;;) {
    const size_t c = body.find(',', at);
    parts.push_back(body.substr(at, c == std::string::npos ? std::string::npos : c - at));
    if (c == std::string::npos) break;
    at = c + 1;
  }
  if (parts[0].empty()) throw InputError("backend '" + spec + "': no plugin path" + usage);
  ps.path = std::filesystem::absolute(parts[0]).lexically_normal().string();
  std::set<std::string> seen;
  for (size_t i = 1; i < parts.size(); ++i) {
    const size_t eq = parts[i].find('=');
    if (eq == std::string::npos || eq == 0)
      throw InputError("backend '" + spec + "': '" + parts[i] + "' is not key=value" + usage);
    const std::string key = parts[i].substr(0, eq);
    if (!seen.insert(key).second) throw InputError("backend '" + spec + "': key '" + key + "' given twice");
    ps.params.emplace_back(key, parts[i].substr(eq + 1));
  }
  return ps;
}

std::unique_ptr<AttentionBackend> make_plugin_backend(const std::string& spec, const BackendContext& ctx) {
  PluginSpec ps = parse_plugin_spec(spec);
  // A path that names no file is a typo in the command, not a kernel that
  // failed: bad input before anything runs. A file that exists but does not
  // load, crashes or returns NaN is that candidate's failure (below).
  std::error_code ec;
  const auto st = std::filesystem::status(ps.path, ec);
  if (!std::filesystem::exists(st))
    throw InputError("backend '" + printable(spec) + "': no plugin file " + printable(ps.path) +
                     (ec && ec != std::errc::no_such_file_or_directory ? " (" + ec.message() + ")" : ""));
  if (std::filesystem::is_directory(st))
    throw InputError("backend '" + printable(spec) + "': " + printable(ps.path) + " is a folder, not a plugin file");
  auto b = std::make_unique<PluginBackend>(spec, std::move(ps));
  if (!ctx.fixture_path.empty()) {
    const ProbeOutcome pr = run_plugin_probe(ctx.probe_exe, spec, ctx.fixture_path, probe_timeout(ctx));
    if (!pr.ok) {
      b->fail(pr.message);
      return b;
    }
  }
  b->load();
  return b;
}

int plugin_probe_main(const std::string& spec, const std::string& fixture_path) {
  try {
    LoadOptions lo;
    lo.allow_nonfinite = true;  // the parent already loaded it under the user's flags
    const Fixture fx = load_fixture(fixture_path, lo);
    const AttentionProblem problem = attention_problem(fx);
    auto b = std::make_unique<PluginBackend>(spec, parse_plugin_spec(spec));
    b->load();
    // Twice: a warm-up and a timed run, as the gate will.
    for (int i = 0; i < 2; ++i) b->run(problem);
    std::cout << "ok: " << b->name() << "\n";
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "plugin-probe: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace ts
