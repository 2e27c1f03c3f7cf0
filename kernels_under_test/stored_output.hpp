#pragma once
// A backend that replays an output stored in the fixture: /outputs/NAME/attention
// (or /attention/observed for NAME "observed"), with the timing samples of
// /timings/NAME when present. This is how a kernel run elsewhere (on the GPU
// machine, in PyTorch) is judged: capture its output and timings, then gate.
#include <memory>
#include <string>

#include "reference/attention_problem.hpp"

namespace ts {

std::unique_ptr<AttentionBackend> make_stored_backend(const std::string& name,
                                                      const std::string& fixture_path);

}  // namespace ts
