#pragma once
// No silent hours: which exact reference a command uses, and a refusal to
// start a CPU run estimated to take longer than a limit (default 10 minutes)
// unless the user asks for it (--allow-slow).
#include <string>
#include <vector>

#include "core/block_config.hpp"

namespace ts {

// Whether a CUDA device is usable (false in a build without CUDA); `why` says
// why not.
bool device_present(std::string* why = nullptr);
// A device backend spec (exact_cuda, sage2_cuda, ...) without a device is an
// environment error: InputError naming the spec, before any work starts.
void require_device_for(const std::string& spec);

// The exact reference as a spec. `requested`: "auto" (default), "exact",
// "exact_cuda", or any backend spec. auto and the two plain names prefer a
// stored exact output (/outputs/exact or /outputs/exact_cuda, either one);
// auto otherwise takes the device mirror when a device is present and the
// CPU run would be long, else the CPU reference.
struct ExactChoice {
  std::string spec;  // what to make (e.g. "stored:exact_cuda", "exact_cuda", "exact")
  std::string why;   // one line for the report
};
ExactChoice choose_exact(const std::string& requested, const std::string& fixture, const BlockConfig& c);

// InputError unless /outputs/<name> ("exact" or "exact_cuda") was written by that float64
// reference: another output stored under the reference's name would judge every candidate
// against itself.
void check_stored_exact(const std::string& fixture, const std::string& name);

// Dense attention FLOPs (4 S^2 H D) and the estimated seconds of one CPU run
// of a dense backend (exact, sage2) at a rate above the measured one
// (README "Speed"), so the estimate is a lower bound.
double attention_flops(const BlockConfig& c);
double estimate_cpu_attention_s(const BlockConfig& c);
// True when `spec` runs dense attention on the host (exact, sage2 kinds).
bool is_dense_cpu_backend(const std::string& spec);

struct SlowGuard {
  bool allow_slow = false;
  // Default 600 s; the environment variable TOUCHSTONE_SLOW_LIMIT_S overrides it.
  double limit_s = 600;
  static SlowGuard from_env(bool allow_slow);
};
// `runs`: backend specs with how many times each runs on this fixture.
// InputError with the estimate when the dense CPU runs add up to more than
// the limit and allow_slow is off.
void refuse_slow_cpu(const std::vector<std::pair<std::string, int>>& runs, const BlockConfig& c,
                     const SlowGuard& guard, const std::string& command);

}  // namespace ts
