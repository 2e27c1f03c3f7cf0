// touchstone import-report REPORT -o M.json: maps a benchmark report of the
// seed's layout to a touchstone.measurements/1 file for `touchstone gate -m`.
#include <iostream>
#include <map>
#include <memory>

#include "core/error.hpp"
#include "gates/import_report.hpp"
#include "core/write_file.hpp"
#include "tools/command.hpp"

namespace cmd_import_report {

struct Opts {
  std::string report, out;
  ts::cli::ReportTarget json;
  std::vector<std::string> strip;
};

int run(const Opts& o) {
  if (o.out.empty() && !o.json.on()) throw ts::InputError("give -o M.json (or --json to print the measurements)");
  ts::ImportOptions io;
  for (const auto& s : o.strip) io.strip_suffixes.push_back(s);
  const ts::MeasurementsFile m = ts::import_report_file(o.report, io);
  const std::string text = m.to_json().dump(2) + "\n";
  if (!o.out.empty()) ts::write_file_atomic(o.out, text);
  if (o.json.on()) {
    o.json.emit(text);
    if (o.json.to_stdout()) return ts::kPass;
  }
  std::map<std::string, std::map<std::string, int>> counts;  // backend -> level -> n
  for (const auto& e : m.entries) counts[e.backend][e.level]++;
  std::cout << o.report << ": " << m.entries.size() << " measurements of " << counts.size()
            << " backends -> " << o.out << "\n";
  for (const auto& b : m.backends()) {
    std::cout << "  " << b << ":";
    for (const auto& [level, n] : counts[b]) std::cout << " " << level << " " << n << ";";
    std::cout << "\n";
  }
  for (const auto& n : m.notes) std::cout << "  note: " << n << "\n";
  return ts::kPass;
}

ts::cli::Registration reg{
    "import-report",
    "Map a benchmark report (the seed's layout) to a touchstone.measurements/1 file",
    [](CLI::App& app) -> ts::cli::Action {
      auto o = std::make_shared<Opts>();
      app.add_option("report", o->report, "benchmark report (JSON)")->required();
      ts::cli::mark_output(app.add_option("-o,--output", o->out, "measurements file to write"), true);
      ts::cli::add_json_option(app, o->json, "the result");
      ts::cli::set_example(app, "touchstone import-report tests/gates/data/gb10_sage2_vs_sol_block24.json -o m.json");
      app.add_option("--strip-suffix", o->strip,
                     "a further backend-name qualifier to strip (repeatable; "
                     "_exact_conditioning_kv always is)");
      return [o] { return run(*o); };
    }};

}  // namespace cmd_import_report
