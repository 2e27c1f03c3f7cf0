// touchstone import-report REPORT -o M.json: maps a benchmark report of the
// seed's layout to a touchstone.measurements/1 file for `touchstone gate -m`.
#include <iostream>
#include <map>
#include <memory>

#include "core/error.hpp"
#include "gates/import_report.hpp"
#include "gates/report.hpp"
#include "tools/command.hpp"

namespace {

struct Opts {
  std::string report, out;
  bool json = false;
  std::vector<std::string> strip;
};

int run(const Opts& o) {
  if (o.out.empty() && !o.json) throw ts::InputError("give -o M.json (or --json to print the measurements)");
  ts::ImportOptions io;
  for (const auto& s : o.strip) io.strip_suffixes.push_back(s);
  const ts::MeasurementsFile m = ts::import_report_file(o.report, io);
  const std::string text = m.to_json().dump(2) + "\n";
  if (!o.out.empty()) ts::write_file_atomic(o.out, text);
  if (o.json) {
    std::cout << text;
    return ts::kPass;
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
      app.add_option("-o,--output", o->out, "measurements file to write");
      app.add_flag("--json", o->json, "print the measurements as JSON on stdout");
      app.add_option("--strip-suffix", o->strip,
                     "a further backend-name qualifier to strip (repeatable; "
                     "_exact_conditioning_kv always is)");
      return [o] { return run(*o); };
    }};

}  // namespace
