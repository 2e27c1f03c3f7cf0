#pragma once
// The timing flags' defaults, one table for every command that times (the
// C++ `gate`/`sweep` and Python's `replay`, which reads them through
// `touchstone tables` or the extension). They differ on purpose: `gate` times
// a candidate and its baseline in pairs A B A B (each pair is one sample of
// the ratio, and a pair costs two runs), while `replay` times one kernel
// alone and stores samples that are later paired by index with another
// kernel's: more of them, after more warm-up, since replay's kernels are
// often compiled on their first calls (Triton, cuDNN plans).
namespace ts {

struct PairedTimingDefaults {
  int pairs, warmup, rotate;
};
struct ReplayTimingDefaults {
  int reps, warmup, rotate;
};

inline constexpr PairedTimingDefaults kGateTiming{10, 1, 2};
inline constexpr ReplayTimingDefaults kReplayTiming{20, 3, 3};

// The attributes of /timings/<name> that say how its samples were taken: the clock
// (gates/verdict.hpp kClock*), one timing run id for every sample, or one per sample
// (samples of one run pair by index with another kernel's of the same run).
inline constexpr const char* kClockAttr = "clock";
inline constexpr const char* kTimingRunAttr = "timing_run";
inline constexpr const char* kTimingRunsAttr = "timing_runs";

// A stored time faster than this dense-equivalent rate (4 S^2 H D FLOPs per call) is not
// trusted: a timer that missed the kernel, samples in seconds taken for ms. The ceiling is
// several times the fastest dense-equivalent rate measured (SageAttention's Hopper kernel on
// the H200: 790 TFLOP/s; a routed kernel's dense-equivalent rate is higher by 1/density, hence
// the margin). The gate's evidence (drivers/run_cases.cpp) and Python's sage-fidelity
// (through `touchstone tables`) judge by the same figure.
inline constexpr double kMistrustCeilingTflops = 50000;

}  // namespace ts
