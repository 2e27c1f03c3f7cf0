// touchstone sweep F --tau LIST: the speed/fidelity curve of a routed backend, one row per
// tau (density, distance to the baseline and to exact, time), plus the fixture's stored real
// kernels; with --gate every row judged by the gate engine, the block's per-stage chain, and
// Markdown/HTML reports: the seed's table in one command (drivers/sweep.hpp).
#include <iostream>
#include <sstream>
#include <memory>

#include "core/error.hpp"
#include "drivers/sweep.hpp"
#include "reference/sage2_presets.hpp"
#include "report/sweep_report.hpp"
#include "tools/command.hpp"
#include "tools/record_option.hpp"

namespace cmd_sweep {

struct Opts {
  std::string fixture;
  ts::SweepOptions s;
  ts::cli::ReportTarget json, markdown, html;
  ts::cli::RecordTarget record;
};

int run(const Opts& o) {
  int to_stdout = 0;
  for (const auto* t : {&o.json, &o.markdown, &o.html}) to_stdout += t->to_stdout();
  if (to_stdout > 1) throw ts::InputError("at most one of --json/--markdown/--html may go to stdout (-)");
  if (o.s.stored != "auto" && o.s.stored != "none") {
    std::vector<std::string> names;
    std::stringstream in(o.s.stored);
    for (std::string n; std::getline(in, n, ',');)
      if (!n.empty()) names.push_back(n);
    ts::cli::refuse_repeats(names, "--stored");
  }
  if ((o.markdown.on() || o.html.on()) && o.s.gate.empty())
    throw ts::InputError("--markdown and --html need --gate (the reports show verdicts)");
  if (o.record.on() && o.s.gate.empty()) throw ts::InputError("--record needs --gate (the store keeps verdicts)");
  o.record.prepare("sweep");
  const ts::SweepResult r = ts::run_sweep(o.fixture, o.s);
  if (r.run) o.record.record(*r.run);
  o.json.emit(ts::sweep_json(r).dump(2) + "\n");
  if (o.markdown.on()) o.markdown.emit(ts::sweep_markdown(r));
  if (o.html.on()) o.html.emit(ts::sweep_html(r));
  if (to_stdout == 0) std::cout << ts::sweep_text(r) << std::flush;
  return r.exit_code();
}

ts::cli::Registration reg{
    "sweep",
    "Run a routed backend over a list of tau beside the baseline, exact and the stored kernels: "
    "density, distance to the baseline and to exact, time; with --gate verdicts, the block's "
    "stage chain and Markdown/HTML reports. Exit 0 (with --gate: 0 all accepted, 1 otherwise), 2 bad input",
    [](CLI::App& app) -> ts::cli::Action {
      auto o = std::make_shared<Opts>();
      ts::SweepOptions& s = o->s;
      s.baseline = ts::sage2_default_spec();
      app.add_option("fixture", o->fixture, "fixture file (HDF5)")->required();
      app.add_option("--backend", s.backend, "backend kind taking tau (sol, sol_cuda)")->capture_default_str();
      ts::cli::add_number_list_option(app, "--tau", s.taus, "comma-separated thresholds");
      app.add_option("--precision", s.precision, "bf16 | int8_qk | int8_qk_pv");
      app.add_option("--param", s.params, "extra backend knob key=value (repeatable)");
      app.add_option("--baseline", s.baseline, "backend spec the rows are compared with")->capture_default_str();
      app.add_option("--exact", s.exact,
                     "the exact reference: auto (a stored /outputs/exact or /outputs/exact_cuda, else the "
                     "device mirror for a large fixture when a device is present, else the CPU), exact, "
                     "exact_cuda, or any backend spec")
          ->capture_default_str();
      app.add_option("--stored", s.stored,
                     "stored outputs as extra rows: auto (every output stored with /timings: kernels run "
                     "elsewhere), none, or NAME,NAME")
          ->capture_default_str();
      app.add_option("--gate,-g", s.gate,
                     "judge every row with this gate file or built-in (sparse_acceptance | sage_compat | ...)");
      app.add_option("--block", s.block,
                     "with --gate, the block's per-stage chain (nvfp4 + the baseline's attention against "
                     "fp64 + exact): auto (when the fixture has /block) | off")
          ->capture_default_str();
      app.add_option("--pairs", s.pairs,
                     "with a speed rule, timed pairs per row as touchstone gate takes them; 0: none (the "
                     "rule is missing, with the reason, except between two stored sides' /timings)")
          ->capture_default_str()
          ->check(ts::cli::integer_in(0, 1000000));
      app.add_option("--warmup", s.warmup, "untimed warm-up pairs (with --pairs)")
          ->capture_default_str()
          ->check(ts::cli::integer_in(0, 1000000));
      ts::cli::add_seed_option(app, s.seed, "bootstrap seed");
      app.add_flag("--allow-slow", s.allow_slow,
                   "start even when the CPU work is estimated over the limit (10 min; env TOUCHSTONE_SLOW_LIMIT_S)");
      app.add_flag("--allow-nonfinite", s.allow_nonfinite, "accept NaN/Inf in the fixture inputs");
      app.add_flag("--accuracy-only", s.accuracy_only,
                   "leave out the gate's speed rules: every report says so, the exit code follows accuracy alone");
      app.add_option("--block-linear", s.block_linear,
                     "the block chain's production-like linears: nvfp4 | bf16 | fp64")->capture_default_str();
      app.add_option("--block-recipe", s.block_recipe, "its NVFP4 recipe (with --block-linear nvfp4)")
          ->capture_default_str();
      ts::cli::add_json_option(app, o->json, "the result");
      ts::cli::add_report_option(app, "--markdown", o->markdown, "with --gate, write the table as Markdown");
      ts::cli::add_report_option(app, "--html", o->html, "with --gate, write the table as a self-contained HTML page");
      ts::cli::add_record_options(app, o->record);
      // The preset comes from the one table (tests/reference/test_sage2_presets.cpp).
      ts::cli::set_example(app,
                           std::string("touchstone sweep b.h5 --backend sol_cuda --tau 0.5,1,1.3,2,3 --baseline "
                                       "sage2_cuda:preset=") +
                               ts::sage2_default_preset().name +
                               " --exact exact_cuda --gate sparse_acceptance --markdown t.md --html t.html");
      return [o] { return run(*o); };
    }};

}  // namespace cmd_sweep
