#pragma once
// touchstone fixture extract F --heads LIST --tokens A:B [--with SPEC ...] -o SMALL
// (docs/triage.md "The slice"): a valid fixture of some heads and a
// contiguous token range of F, small enough to attach to a bug report, that
// still shows the failure. Heads are independent in attention, so the kept
// heads' outputs are the full run's; keys outside the token range are gone
// from the slice, so its stored outputs (sliced from the full sequence) are
// compared only with each other: the slice always holds /outputs/exact,
// computed on the full sequence.
#include <cstdint>
#include <string>
#include <vector>

namespace ts {

struct ExtractOptions {
  std::vector<int64_t> heads;  // empty = every head
  int64_t token_begin = 0, token_end = -1;  // [begin, end); end -1 = S
  std::vector<std::string> with;  // backend specs run on the full sequence (kept heads) and stored sliced
  std::string exact = "auto";     // how /outputs/exact is made when F has none (choose_exact)
  bool force = false;             // replace an existing output file
};

// "2,3" -> {2, 3}; "A:B" -> [A, B). InputError naming the flag otherwise.
std::vector<int64_t> parse_head_list(const std::string& text);
std::pair<int64_t, int64_t> parse_token_range(const std::string& text);

// Writes `out` (atomically; refused when it exists unless force) and returns a
// one-line summary. Slices that cut a latent frame (thw order) or a tiled
// video segment, hold no whole frame, or name a head or token out of range
// are InputErrors before anything is written.
std::string extract_fixture(const std::string& in, const std::string& out, const ExtractOptions& opts);

}  // namespace ts
