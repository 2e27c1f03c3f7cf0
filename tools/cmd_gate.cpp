// touchstone gate: judges candidates against a gate file, either by running
// them on a fixture (accuracy against the baseline and the exact reference,
// paired timing) or from a measurements file (an imported report).
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <memory>

#include "core/error.hpp"
#include "gates/gate_file.hpp"
#include "gates/measurements.hpp"
#include "gates/report.hpp"
#include "gates/verdict.hpp"
#include "tools/command.hpp"
#include "tools/gate_runner.hpp"

namespace {

struct Opts {
  std::string gate = "sparse_acceptance", fixture, measurements, baseline;
  std::vector<std::string> candidates;
  int pairs = 10, warmup = 1, rotate = 2;
  double budget_s = 0;
  uint64_t seed = 1;
  std::string json, junit, markdown, html;
  bool allow_nonfinite = false;
};

ts::GateRun run_measurements(const ts::GateFile& gate, const std::string& baseline_spec, const Opts& o) {
  const ts::MeasurementsFile m = ts::load_measurements(o.measurements);
  const std::string baseline = ts::resolve_measured_baseline(m, baseline_spec);
  std::vector<std::string> names = o.candidates;
  const auto all = m.backends();
  if (names.empty()) {
    for (const auto& b : all)
      if (b != baseline) names.push_back(b);
  }
  for (const auto& n : names)
    if (std::find(all.begin(), all.end(), n) == all.end()) {
      std::string list;
      for (const auto& b : all) list += (list.empty() ? "" : ", ") + b;
      throw ts::InputError(o.measurements + ": no backend named '" + n + "' (backends: " + list + ")");
    }
  if (names.empty()) throw ts::InputError(o.measurements + ": no candidate besides the baseline '" + baseline + "'");
  ts::GateRun run;
  run.gate = gate;
  run.mode = "measurements";
  run.input = o.measurements;
  run.baseline = baseline;
  run.context = {{"source", m.source}, {"report", m.context}, {"notes", m.notes}, {"seed", o.seed}};
  for (const auto& n : names) {
    const std::string repro = "touchstone gate --gate " + ts::shell_quote(o.gate) + " --measurements " +
                              ts::shell_quote(o.measurements) + " --candidate " + ts::shell_quote(n);
    run.candidates.push_back(ts::judge(gate, ts::evidence_from_measurements(m, gate, baseline, n, o.seed), repro));
  }
  return run;
}

ts::GateRun run_fixture(const ts::GateFile& gate, const std::string& baseline, const Opts& o) {
  ts::GateRunOptions go;
  go.pairs = o.pairs;
  go.warmup = o.warmup;
  go.rotate = o.rotate;
  go.budget_s = o.budget_s;
  go.seed = o.seed;
  go.allow_nonfinite = o.allow_nonfinite;
  go.gate_arg = o.gate;
  return ts::run_gate_on_fixture(gate, o.fixture, baseline, o.candidates, go);
}

int run(const Opts& o) {
  if (o.fixture.empty() == o.measurements.empty())
    throw ts::InputError("give exactly one of --fixture F or --measurements M.json");
  const ts::GateFile gate = ts::load_gate(o.gate);
  const std::string baseline = o.baseline.empty() ? gate.baseline : o.baseline;
  const ts::GateRun r = o.fixture.empty() ? run_measurements(gate, baseline, o) : run_fixture(gate, baseline, o);
  if (!o.json.empty()) ts::write_file_atomic(o.json, ts::render_json(r));
  if (!o.junit.empty()) ts::write_file_atomic(o.junit, ts::render_junit(r));
  if (!o.markdown.empty()) ts::write_file_atomic(o.markdown, ts::render_markdown(r));
  if (!o.html.empty()) ts::write_file_atomic(o.html, ts::render_html(r));
  std::cout << ts::render_terminal(r) << std::flush;
  return r.exit_code();
}

ts::cli::Registration reg{
    "gate",
    "Judge candidate backends against a gate file (ACCEPT / REJECT / INCONCLUSIVE): run them on a "
    "fixture, or judge a measurements file. Exit 0 all accepted, 1 otherwise, 2 bad input",
    [](CLI::App& app) -> ts::cli::Action {
      auto o = std::make_shared<Opts>();
      app.add_option("--gate,-g", o->gate,
                     "gate file, or a built-in: sparse_acceptance | sage_compat | bit_exact")
          ->capture_default_str();
      app.add_option("--fixture,-f", o->fixture, "fixture to run the backends on");
      app.add_option("--measurements,-m", o->measurements,
                     "touchstone.measurements/1 file to judge instead (see import-report)");
      app.add_option("--baseline,-b", o->baseline, "baseline backend spec (default: the gate's)");
      app.add_option("--candidate,-c", o->candidates,
                     "candidate backend spec (repeatable); with --measurements a backend name "
                     "(default: every backend but the baseline)");
      app.add_option("--pairs", o->pairs, "timed pairs per candidate (A B A B ...)")->capture_default_str();
      app.add_option("--warmup", o->warmup, "untimed warm-up pairs")->capture_default_str();
      app.add_option("--budget-s", o->budget_s, "stop timing a candidate after this many seconds (min 3 pairs)");
      app.add_option("--rotate", o->rotate, "input copies timed runs cycle through")->capture_default_str();
      app.add_option("--seed", o->seed, "bootstrap seed")->capture_default_str();
      app.add_option("--json", o->json, "write the full report as JSON to this file");
      app.add_option("--junit", o->junit, "write JUnit XML (one test case per candidate x rule)");
      app.add_option("--markdown", o->markdown, "write a Markdown summary (CI job summary)");
      app.add_option("--html", o->html,
                     "write a self-contained HTML page: verdicts, rules tables, figures against bounds as SVG plots");
      app.add_flag("--allow-nonfinite", o->allow_nonfinite, "accept NaN/Inf in the fixture's inputs");
      return [o] { return run(*o); };
    }};

}  // namespace
