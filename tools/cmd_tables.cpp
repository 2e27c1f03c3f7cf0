// touchstone tables [--json] [--config FILE|-]: the tables other languages
// read instead of keeping copies (drivers/tables.hpp), and the one /config
// completion and validation (core/config_json.hpp) for writers that have no
// extension to call it in-process.
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>
#include <sstream>

#include "core/config_json.hpp"
#include "core/error.hpp"
#include "drivers/tables.hpp"
#include "report/terminal.hpp"
#include "tools/command.hpp"

namespace cmd_tables {

struct Opts {
  ts::cli::ReportTarget json;
  std::string config;
};

int run(const Opts& o) {
  if (!o.config.empty()) {
    std::string text;
    if (o.config == "-") {
      text.assign(std::istreambuf_iterator<char>(std::cin), {});
    } else {
      std::ifstream in(o.config);
      if (!in) throw ts::InputError(o.config + ": cannot open the /config JSON file");
      text.assign(std::istreambuf_iterator<char>(in), {});
    }
    const std::string where = o.config == "-" ? "config (stdin)" : o.config;
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(text);
    } catch (const std::exception&) {
      throw ts::InputError(where + ": not valid JSON");
    }
    std::cout << ts::config_to_json(ts::config_from_json(j, where)).dump() << "\n";
    return ts::kPass;
  }
  const nlohmann::json t = ts::export_tables();
  if (o.json.on()) {
    o.json.emit(t.dump(2) + "\n");
    if (o.json.to_stdout()) return ts::kPass;
  }
  std::ostringstream txt;
  txt << "touchstone " << t["version"].get<std::string>() << "\n";
  txt << "stages:";
  for (const auto& s : t["stages"]) txt << " " << s["name"].get<std::string>();
  txt << "\nsage2 presets:";
  for (const auto& p : t["sage2_presets"]) txt << " " << p["name"].get<std::string>();
  txt << "\nfixture presets:";
  for (const auto& p : t["fixture_presets"]) txt << " " << p["name"].get<std::string>();
  const auto& g = t["timing"]["gate"];
  const auto& r = t["timing"]["replay"];
  txt << "\ntiming defaults: gate --pairs " << g["pairs"] << " --warmup " << g["warmup"] << " --rotate "
            << g["rotate"] << "; python3 -m touchstone replay --reps " << r["reps"] << " --warmup "
            << r["warmup"] << " --rotate " << r["rotate"] << "\n";
  const auto& ff = t["fixture_format"];
  txt << "element types:";
  for (const auto& d : ff["dtypes"]) txt << " " << d["name"].get<std::string>();
  txt << "\ncontent digest: " << ff["digest"]["scheme"].get<std::string>() << " (leaves of "
      << ff["digest"]["leaf_bytes"] << " bytes)\n";
  const auto& sol = t["sol"];
  txt << "sol routing: " << sol["routing_format"].get<std::string>() << ", block_q " << sol["block_q"]
      << ", block_k " << sol["block_k"] << " (at most " << sol["block_k_max"] << ")\n";
  txt << "mistrusted: a stored time faster than " << t["mistrust"]["ceiling_tflops"].get<double>()
      << " TFLOP/s dense-equivalent\n";
  std::cout << ts::wrap_each_line(txt.str(), ts::terminal_width());
  return ts::kPass;
}

ts::cli::Registration reg{
    "tables",
    "The stage, preset and timing tables (for Python and other readers), and /config validation",
    [](CLI::App& app) -> ts::cli::Action {
      auto o = std::make_shared<Opts>();
      ts::cli::add_json_option(app, o->json, "every table");
      app.add_option("--config", o->config,
                     "a /config as JSON (FILE or - for stdin): print it completed with the defaults, "
                     "or exit 2 naming the rule it breaks");
      ts::cli::set_example(app, "touchstone tables --json   |   echo '{...}' | touchstone tables --config -");
      return [o] { return run(*o); };
    }};

}  // namespace cmd_tables
