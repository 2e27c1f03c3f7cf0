#pragma once
// Kind "plugin": a kernel under test in a shared library that speaks
// touchstone_kernel.h, run in-process on the fixture's tensors (docs/plugins.md).
//   plugin:PATH.so[,key=value...]   (the keys go to the plugin's tsk_init)
// A plugin that cannot be loaded, crashes, hangs or returns non-finite output
// fails as a candidate with its reason; it never takes the process down:
// before it is loaded here, a child process runs it on the fixture (probe).
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "kernels_under_test/registry.hpp"

namespace ts {

struct PluginSpec {
  std::string path;  // absolute
  std::vector<std::pair<std::string, std::string>> params;
};

// "plugin:PATH[,key=value...]"; InputError for a malformed spec (no file
// check here; make_plugin_backend refuses a path that names no file).
PluginSpec parse_plugin_spec(const std::string& spec);

// InputError (bad input, before anything runs) for a malformed spec or a
// path that names no file. Never throws for a plugin that exists but fails
// to load or to run: the backend then fails every run() with the reason (a
// PluginError), so the gate rejects that candidate and judges the others. With ctx.fixture_path set, the plugin is
// first probed in a child process (ctx.probe_exe __plugin-probe).
std::unique_ptr<AttentionBackend> make_plugin_backend(const std::string& spec, const BackendContext& ctx);

// The child's side of the probe (hidden subcommand `touchstone __plugin-probe`):
// loads the plugin and runs it twice on the fixture. Prints "ok" and returns 0,
// or prints "plugin-probe: REASON" on stderr and returns 1.
int plugin_probe_main(const std::string& spec, const std::string& fixture_path);

}  // namespace ts
