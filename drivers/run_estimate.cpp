#include "drivers/run_estimate.hpp"

#include <omp.h>

#include <cstdio>
#include <cstdlib>

#include "core/error.hpp"
#include "fixtures/fixture.hpp"
#include "kernels_under_test/registry.hpp"
#ifdef TOUCHSTONE_HAVE_CUDA
#include "reference/cuda/exact_kernel.hpp"
#endif

namespace ts {
namespace {

// Measured: 7.2 GFLOP/s a core on 2 cores (medium), 7.4 on 16 cores of the
// GPU machine (README "Speed"); 8 keeps the estimate a lower bound.
constexpr double kHostFlopsPerThread = 8e9;
// auto picks the device mirror once the CPU run would take longer than this.
constexpr double kLargeFixtureS = 20;

std::string minutes(double s) {
  char b[64];
  if (s < 10) std::snprintf(b, sizeof b, "%.2g s", s);
  else if (s < 120) std::snprintf(b, sizeof b, "%.0f s", s);
  else if (s < 7200) std::snprintf(b, sizeof b, "%.0f min", s / 60);
  else std::snprintf(b, sizeof b, "%.1f h", s / 3600);
  return b;
}

}  // namespace

bool device_present(std::string* why) {
#ifdef TOUCHSTONE_HAVE_CUDA
  return cuda::device_available(why);
#else
  if (why) *why = "this build has no CUDA";
  return false;
#endif
}

void require_device_for(const std::string& spec) {
  // A spec that does not parse is reported where it is made, with its own error.
  const auto s = BackendSpec::try_parse(spec);
  if (!s || !s->is_device()) return;
  std::string why;
  if (!device_present(&why))
    throw InputError("backend '" + spec + "' runs on a CUDA device, and there is none here (" + why + ")");
}

void check_stored_exact(const std::string& fixture, const std::string& name) {
  const std::string object = "/outputs/" + name + "/attention";
  const nlohmann::json attrs = read_attrs(fixture, object);
  nlohmann::json params;
  if (attrs.contains("params") && attrs["params"].is_string())
    params = nlohmann::json::parse(attrs["params"].get<std::string>(), nullptr, false);
  // Either float64 reference under either name: they agree to ~1e-15 (docs/numerics.md).
  const std::string backend = params.is_object() ? params.value("backend", std::string()) : "";
  const bool exact = (backend == "exact" || backend == "exact_cuda") &&
                     params.value("precision", std::string()) == "fp64";
  if (!exact)
    throw InputError(fixture + ": " + object + " is taken as the exact reference, but its params (" +
                     (attrs.contains("params") ? attrs["params"].dump() : std::string("none")) +
                     ") are not a float64 reference's (backend exact or exact_cuda, precision fp64): it holds another output under the "
                     "reference's name; remove it (touchstone fixture rm-output " + fixture + " " + name +
                     ") and store it under its own name");
}

ExactChoice choose_exact(const std::string& requested, const std::string& fixture, const BlockConfig& c) {
  const bool plain = requested == "auto" || requested == "exact" || requested == "exact_cuda";
  if (plain) {
    // Either stored exact output serves: the host and device references agree to ~1e-15.
    std::vector<std::string> names = {"exact", "exact_cuda"};
    if (requested == "exact_cuda") std::swap(names[0], names[1]);
    for (const auto& n : names)
      if (has_dataset(fixture, "/outputs/" + n + "/attention")) {
        check_stored_exact(fixture, n);
        return {"stored:" + n, "the stored /outputs/" + n + "/attention"};
      }
  }
  if (requested != "auto") {
    require_device_for(requested);
    return {requested, "as asked (--exact " + requested + ")"};
  }
  const double est = estimate_cpu_attention_s(c);
  if (est > kLargeFixtureS && device_present())
    return {"exact_cuda", "the device mirror (a CPU run would take about " + minutes(est) + ")"};
  return {"exact", "the CPU reference"};
}

double attention_flops(const BlockConfig& c) {
  const double S = static_cast<double>(c.tokens());
  return 4.0 * S * S * static_cast<double>(c.heads) * static_cast<double>(c.head_dim);
}

double estimate_cpu_attention_s(const BlockConfig& c) {
  return attention_flops(c) / (kHostFlopsPerThread * omp_get_max_threads());
}

bool is_dense_cpu_backend(const std::string& spec) {
  const auto s = BackendSpec::try_parse(spec);
  return s && s->is_dense_cpu();
}

SlowGuard SlowGuard::from_env(bool allow_slow) {
  SlowGuard g;
  g.allow_slow = allow_slow;
  if (const char* e = std::getenv("TOUCHSTONE_SLOW_LIMIT_S")) {
    char* end = nullptr;
    const double v = std::strtod(e, &end);
    if (!*e || *end || !(v >= 0))
      throw InputError(std::string("TOUCHSTONE_SLOW_LIMIT_S='") + e + "' is not a number of seconds >= 0");
    g.limit_s = v;
  }
  return g;
}

void refuse_slow_cpu(const std::vector<std::pair<std::string, int>>& runs, const BlockConfig& c,
                     const SlowGuard& guard, const std::string& command) {
  if (guard.allow_slow) return;
  int dense = 0;
  for (const auto& [spec, n] : runs)
    if (is_dense_cpu_backend(spec)) dense += n;
  const double est = dense * estimate_cpu_attention_s(c);
  if (dense == 0 || est <= guard.limit_s) return;
  char rate[96];
  std::snprintf(rate, sizeof rate, "%d dense CPU attention run(s) of %.3g GFLOP at ~%.0f GFLOP/s on %d threads",
                dense, attention_flops(c) / 1e9, kHostFlopsPerThread * omp_get_max_threads() / 1e9,
                omp_get_max_threads());
  throw InputError(command + ": refusing a CPU run estimated at about " + minutes(est) + " (" + rate +
                   "), over the " + minutes(guard.limit_s) +
                   " limit: store an exact output (touchstone reference F --backend exact_cuda on a GPU "
                   "machine), use stored: outputs, pass --exact exact_cuda on a device, or --allow-slow");
}

}  // namespace ts
