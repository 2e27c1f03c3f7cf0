// touchstone scan: a kernel's error against shape on synthetic fixtures, with bisection to
// the shape where it leaves its trend (drivers/scan.hpp, docs/scan.md).
#include <iostream>
#include <memory>

#include "core/error.hpp"
#include "drivers/scan.hpp"
#include "report/scan_report.hpp"
#include "tools/command.hpp"

namespace cmd_scan {

struct Opts {
  ts::ScanOptions s;
  std::string dim = "seq";
  int64_t seq = 0, heads = 0, head_dim = 0;
  std::string label;
  ts::cli::ReportTarget json, html;
};

int run(Opts& o) {
  if (o.json.to_stdout() && o.html.to_stdout()) throw ts::InputError("at most one of --json/--html may go to stdout (-)");
  o.s.dim = ts::parse_scan_dim(o.dim);
  if (o.seq) o.s.seq = o.seq;
  if (o.heads) o.s.heads = o.heads;
  if (o.head_dim) o.s.head_dim = o.head_dim;
  ts::ScanResult r = ts::run_scan(o.s);
  if (!o.label.empty()) r.candidate_name = o.label;
  o.json.emit(ts::scan_json(r).dump(2) + "\n");
  if (o.html.on()) o.html.emit(ts::scan_html(r));
  if (!o.json.to_stdout() && !o.html.to_stdout()) std::cout << ts::scan_text(r) << std::flush;
  return r.exit_code();
}

ts::cli::Registration reg{
    "scan",
    "A kernel's error against shape (sequence length, heads or head dim) on synthetic fixtures, "
    "bisecting to where it leaves its trend (a cliff). Exit 0 no cliff, 1 a cliff or a failed run, 2 bad input",
    [](CLI::App& app) -> ts::cli::Action {
      auto o = std::make_shared<Opts>();
      ts::ScanOptions& s = o->s;
      app.add_option("--candidate,-c", s.candidate, "backend spec or plugin:PATH.so,key=value to scan");
      app.add_option("--worker", s.worker,
                     "instead of --candidate: a command speaking the scan worker protocol (docs/scan.md); "
                     "python3 -m touchstone scan --kernel module:fn starts one");
      app.add_option("--label", o->label, "what the reports call the candidate (default: the backend's name)");
      app.add_option("--exact", s.exact, "the exact reference backend (exact, exact_cuda)")->capture_default_str();
      app.add_option("--dim", o->dim, "what is varied: seq | heads | head_dim")->capture_default_str();
      app.add_option("--from", s.search.from, "the smallest shape")->required()->check(ts::cli::integer_in(1, 1000000000));
      app.add_option("--to", s.search.to, "the largest shape")->required()->check(ts::cli::integer_in(1, 1000000000));
      app.add_option("--points", s.search.points, "the first grid's points, geometric over the range (>= 4)")
          ->capture_default_str();
      app.add_option("--budget", s.search.budget, "evaluations in all, grid included")->capture_default_str();
      app.add_option("--multiple", s.search.multiple,
                     "every shape a multiple of this (a kernel's tile); the finest step of the bisection")
          ->capture_default_str();
      app.add_option("--resolution", s.search.resolution,
                     "stop bisecting when the cliff lies within this share of its shape")
          ->capture_default_str();
      app.add_option("--jump", s.search.jump,
                     "a step is off the trend when the figure changes by more than this factor beyond it")
          ->capture_default_str();
      app.add_option("--floor", s.search.floor, "figures below this count as this (roundoff is no cliff)")
          ->capture_default_str();
      app.add_option("--metric", s.metric, "rel_l2 | rel_l1 | rmse | max_abs | cosine (as 1 - cos)")
          ->capture_default_str();
      app.add_option("--preset", s.preset, "the geometry the shapes are cut from (tiny | ci | medium | block24)")
          ->capture_default_str();
      app.add_option("--seq", o->seq, "the sequence length when it is not varied (default: the preset's)")
          ->check(ts::cli::integer_in(1, 1000000000));
      app.add_option("--heads", o->heads, "the heads when they are not varied (default: the preset's)")
          ->check(ts::cli::integer_in(1, 1000000000));
      app.add_option("--head-dim", o->head_dim, "the head dim when it is not varied (default: the preset's)")
          ->check(ts::cli::integer_in(1, 1000000000));
      ts::cli::add_seed_option(app, s.seed, "synthesis seed");
      app.add_option("--work-dir", s.work_dir, "where a worker's fixtures are written (default: the temp dir)");
      app.add_flag("--allow-slow", s.allow_slow,
                   "start even when the CPU work is estimated over the limit (10 min; env TOUCHSTONE_SLOW_LIMIT_S)");
      app.add_flag("--progress", s.progress, "a line per evaluation on stderr (default: when it is a terminal)");
      ts::cli::add_json_option(app, o->json, "every evaluation and the cliff");
      ts::cli::add_report_option(app, "--html", o->html, "write a self-contained HTML page: the curve, the cliff");
      ts::cli::set_example(app, "touchstone scan --candidate sage2 --from 256 --to 8192 --heads 1 --html scan.html");
      return [o] { return run(*o); };
    }};

}  // namespace cmd_scan
