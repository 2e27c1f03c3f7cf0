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

}  // namespace ts
