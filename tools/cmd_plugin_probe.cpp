// touchstone __plugin-probe (hidden): the child process in which a plugin
// candidate first runs on the fixture, so that a crash, an abort or a hang
// costs that candidate its verdict instead of the whole gate its process
// (kernels_under_test/plugin_backend.hpp).
#include <memory>

#include "kernels_under_test/plugin_backend.hpp"
#include "tools/command.hpp"

namespace cmd_plugin_probe {

struct Opts {
  std::string spec, fixture;
};

ts::cli::Registration reg{
    "__plugin-probe",
    "Internal: run a plugin candidate once in isolation (used by plugin:PATH backends)",
    [](CLI::App& app) -> ts::cli::Action {
      auto o = std::make_shared<Opts>();
      app.group("");  // not listed in touchstone --help
      app.add_option("--spec", o->spec, "plugin:PATH.so[,key=value...]")->required();
      app.add_option("--fixture", o->fixture, "fixture to run it on")->required();
      return [o] { return ts::plugin_probe_main(o->spec, o->fixture); };
    }};

}  // namespace cmd_plugin_probe
