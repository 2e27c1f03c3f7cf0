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
#include "report/gate_report.hpp"
#include "gates/verdict.hpp"
#include "tools/command.hpp"
#include "tools/record_option.hpp"
#include "core/timing_defaults.hpp"
#include "drivers/gate_on_fixture.hpp"
#include "drivers/measurement_evidence.hpp"

namespace cmd_gate {

struct Opts {
  std::string gate = "sparse_acceptance", fixture, measurements, baseline;
  std::vector<std::string> candidates;
  int pairs = ts::kGateTiming.pairs, warmup = ts::kGateTiming.warmup, rotate = ts::kGateTiming.rotate;
  double budget_s = 0;
  uint64_t seed = 1;
  ts::cli::ReportTarget json, junit, markdown, html;
  std::string exact = "auto";
  bool allow_nonfinite = false, allow_slow = false, accuracy_only = false;
  ts::cli::RecordTarget record;
};

ts::GateRun run_fixture(const ts::GateFile& gate, const std::string& baseline, const Opts& o) {
  ts::GateRunOptions go;
  // --pairs 0: nothing timed here (a sweep's rows; its repro lines say so).
  go.timed = o.pairs > 0;
  go.pairs = o.pairs > 0 ? o.pairs : 1;
  go.warmup = o.warmup;
  go.rotate = o.rotate;
  go.budget_s = o.budget_s;
  go.seed = o.seed;
  go.allow_nonfinite = o.allow_nonfinite;
  go.gate_arg = o.gate;
  go.exact = o.exact;
  go.allow_slow = o.allow_slow;
  go.accuracy_only = o.accuracy_only;
  if (!o.measurements.empty())
    return ts::run_cases(gate, ts::measurement_cases(o.measurements, baseline, o.candidates, o.gate, go)).run;
  return ts::run_gate_on_fixture(gate, o.fixture, baseline, o.candidates, go);
}

int run(const Opts& o) {
  if (o.fixture.empty() == o.measurements.empty())
    throw ts::InputError("give exactly one of --fixture F or --measurements M.json");
  ts::cli::refuse_repeats(o.candidates, "--candidate");
  const ts::GateFile gate = ts::load_gate(o.gate);
  const std::string baseline = o.baseline.empty() ? gate.baseline : o.baseline;
  int to_stdout = 0;
  for (const auto* t : {&o.json, &o.junit, &o.markdown, &o.html}) to_stdout += t->to_stdout();
  if (to_stdout > 1) throw ts::InputError("at most one of --json/--junit/--markdown/--html may go to stdout (-)");
  if (!o.measurements.empty() && (o.exact != "auto" || o.allow_slow))
    throw ts::InputError("--exact and --allow-slow apply to --fixture runs");
  o.record.prepare("gate");
  const ts::GateRun r = run_fixture(gate, baseline, o);
  o.record.record(r);
  // Only the reports asked for are rendered: each costs time on large gates.
  if (o.json.on()) o.json.emit(ts::render_json(r));
  if (o.junit.on()) o.junit.emit(ts::render_junit(r));
  if (o.markdown.on()) o.markdown.emit(ts::render_markdown(r));
  if (o.html.on()) o.html.emit(ts::render_html(r));
  if (to_stdout == 0) std::cout << ts::render_terminal(r) << std::flush;
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
      app.add_option("--pairs", o->pairs,
                     "timed pairs per candidate (A B A B ...); a speed rule needs at least 3; 0: nothing is "
                     "timed here (a speed rule on a computed side is missing; two stored sides are still "
                     "judged on their /timings), as a sweep's rows")
          ->capture_default_str()
          ->check(ts::cli::integer_in(0, 1000000));
      app.add_option("--warmup", o->warmup, "untimed warm-up pairs")->capture_default_str()->check(ts::cli::integer_in(0, 1000000));
      app.add_option("--budget-s", o->budget_s, "stop timing a candidate after this many seconds (min 3 pairs; 0: no limit)")
          ->capture_default_str()
          ->check(ts::cli::number_at_least(0));
      app.add_option("--rotate", o->rotate, "input copies timed runs cycle through")
          ->capture_default_str()
          ->check(ts::cli::integer_in(1, 1000));
      app.add_option("--exact", o->exact,
                     "the exact reference: auto (a stored /outputs/exact or /outputs/exact_cuda, else the "
                     "device mirror for a large fixture when a device is present, else the CPU), exact, "
                     "exact_cuda, or any backend spec")
          ->capture_default_str();
      app.add_flag("--allow-slow", o->allow_slow,
                   "start even when the CPU work is estimated over the limit (10 min; env TOUCHSTONE_SLOW_LIMIT_S)");
      ts::cli::add_seed_option(app, o->seed, "bootstrap seed");
      ts::cli::add_json_option(app, o->json, "the full report");
      ts::cli::add_report_option(app, "--junit", o->junit, "write JUnit XML (one test case per candidate x rule)");
      ts::cli::add_report_option(app, "--markdown", o->markdown, "write a Markdown summary (CI job summary)");
      ts::cli::add_report_option(app, "--html", o->html,
                                 "write a self-contained HTML page: verdicts, rules tables, figures against bounds as SVG plots");
      app.add_flag("--allow-nonfinite", o->allow_nonfinite, "accept NaN/Inf in the fixture's inputs");
      app.add_flag("--accuracy-only", o->accuracy_only,
                   "leave out the gate's speed rules (CPU CI runners, where time means nothing): every report "
                   "says so and the exit code follows accuracy alone");
      ts::cli::add_record_options(app, o->record);
      ts::cli::set_example(app, "touchstone gate --gate sage_compat --fixture f.h5 --candidate stored:my_kernel --junit gate.xml");
      return [o] { return run(*o); };
    }};

}  // namespace cmd_gate
