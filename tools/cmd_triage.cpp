// touchstone triage F --candidate X: where and why a candidate's error lies (docs/triage.md).
#include <iostream>
#include <memory>

#include "drivers/triage.hpp"
#include "report/triage_report.hpp"
#include "tools/command.hpp"

namespace cmd_triage {

struct Opts {
  std::string fixture;
  ts::TriageOptions t;
  bool no_decompose = false;
  ts::cli::ReportTarget json, html;
};

ts::cli::Registration reg{
    "triage",
    "Localise a candidate's error: worst elements, non-finite runs, 2-D maps against the baseline's noise "
    "floor, the sol/sage2 decomposition, an A/B diff, the block's first bad stage, and a repro slice",
    [](CLI::App& app) -> ts::cli::Action {
      auto o = std::make_shared<Opts>();
      app.add_option("fixture", o->fixture, "fixture file (HDF5)")->required();
      app.add_option("--candidate", o->t.candidate, "backend spec of the candidate (stored:NAME, sol:tau=1.3, plugin:..., ...)")
          ->required();
      app.add_option("--baseline", o->t.baseline, "backend spec of the noise floor (default: the default sage2 preset)");
      app.add_option("--exact", o->t.exact, "exact reference: auto, exact, exact_cuda or any spec (stored:exact)")
          ->capture_default_str();
      app.add_option("--against", o->t.against, "another version of the kernel: where the two differ, which is closer to exact");
      app.add_option("--top", o->t.top, "worst elements and cells listed")->capture_default_str()->check(ts::cli::integer_in(1, 1000000));
      app.add_flag("--no-decompose", o->no_decompose, "skip the emulation's variants (sol: dense and no-compensation "
                                                       "runs; sage2: one quantiser off at a time)");
      app.add_flag("--allow-slow", o->t.allow_slow, "start a CPU run estimated over the limit anyway");
      ts::cli::add_json_option(app, o->json, "the triage report (touchstone.triage/1)");
      ts::cli::add_report_option(app, "--html", o->html, "a self-contained page with heatmaps of the maps");
      ts::cli::set_example(app, "touchstone triage ci.h5 --candidate sol:tau=1.3 --html triage.html");
      return [o]() -> int {
        o->t.decompose = !o->no_decompose;
        o->t.fixture_arg = o->fixture;
        const nlohmann::json r = ts::run_triage(o->fixture, o->t);
        if (o->html.on()) o->html.emit(ts::render_triage_html(r));
        if (o->json.on()) o->json.emit(r.dump(2) + "\n");
        if (!o->json.to_stdout() && !o->html.to_stdout()) std::cout << ts::render_triage_text(r);
        return 0;
      };
    }};

}  // namespace cmd_triage
