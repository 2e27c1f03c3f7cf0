#pragma once
// Runs the plugin probe in a child process (exec of the touchstone binary, so
// whatever the parent initialised, CUDA included, does not matter) and says
// how it ended: a crash or a hang becomes a message instead of killing us.
#include <string>

namespace ts {

struct ProbeOutcome {
  bool ok = false;
  std::string message;  // why not ok: "crashed: signal 11 (Segmentation fault) ...", the child's reason
};

// `exe __plugin-probe --spec SPEC --fixture FIXTURE`, killed after timeout_s.
ProbeOutcome run_plugin_probe(const std::string& exe, const std::string& spec, const std::string& fixture,
                              double timeout_s);

}  // namespace ts
