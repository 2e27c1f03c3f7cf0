// touchstone chain F... --candidate SCHEDULE: the block stack over every block and
// step of a chain set, error after each block and its growth, each schedule
// judged by a gate on the final block's output (drivers/chain_policy.hpp);
// touchstone policy F... --tau LIST: the (dense steps k, tau) space searched for
// the cheapest schedule that stays Sage-like at the end, and its frontier.
#include <iostream>
#include <memory>

#include "core/error.hpp"
#include "core/progress.hpp"
#include "drivers/chain_policy.hpp"
#include "report/chain_report.hpp"
#include "report/terminal.hpp"
#include "kernels_under_test/registry.hpp"
#include "reference/sage2_presets.hpp"
#include "tools/command.hpp"

namespace cmd_chain {

struct Opts {
  std::vector<std::string> files, candidates;
  ts::ChainOptions c;
  ts::ChainJudgeOptions j;
  std::vector<double> taus;
  std::string backend = "sol", precision = "int8_qk";
  ts::cli::ReportTarget json, html;
};

void add_common(CLI::App& app, Opts& o) {
  app.add_option("files", o.files, "the chain set: its folder, or every block x step file")->required();
  app.add_option("--baseline", o.c.baseline, "the baseline stack's attention, which `dense` names")
      ->capture_default_str();
  app.add_option("--exact", o.c.exact, "the exact stack's attention (exact, exact_cuda)")->capture_default_str();
  app.add_option("--linear", o.c.linear, "the production stacks' linears: nvfp4 | bf16 | fp64")->capture_default_str();
  app.add_option("--recipe", o.c.recipe, "their NVFP4 recipe: te | te_rcp6 | modelopt")->capture_default_str();
  std::string kinds;
  for (const auto& k : ts::block_backend_kinds()) kinds += (kinds.empty() ? "" : " | ") + k.name;
  app.add_option("--block-backend", o.c.block_backend, "where the blocks run: " + kinds)->capture_default_str();
  app.add_option("--gate,-g", o.j.gate, "the gate every schedule is judged by (tensor \"output\")")->capture_default_str();
  app.add_flag("--accuracy-only", o.j.accuracy_only,
               "leave out the gate's speed rules: every report says so, the verdict follows accuracy alone");
  ts::cli::add_seed_option(app, o.j.seed, "bootstrap seed");
  ts::cli::add_json_option(app, o.json, "the result (touchstone.chain/1)");
  ts::cli::add_report_option(app, "--html", o.html, "a page plotting error against block and step");
}

int run(Opts& o, bool search) {
  if (o.json.to_stdout() && o.html.to_stdout()) throw ts::InputError("at most one of --json/--html may go to stdout (-)");
  ts::cli::refuse_repeats(o.candidates, "--candidate");
  const ts::ChainSet set = ts::open_chain_set(o.files);
  if (o.c.baseline.empty()) o.c.baseline = ts::sage2_default_spec();
  std::vector<std::string> texts =
      search ? ts::policy_schedules(set.steps, o.taus, o.backend, o.precision) : o.candidates;
  std::vector<ts::Schedule> schedules;
  for (const auto& t : texts) schedules.push_back(ts::parse_schedule(t, o.c.baseline));
  ts::Progress progress(search ? "policy" : "chain", static_cast<int64_t>(set.blocks) * set.steps);
  o.c.progress = [&progress] { progress.advance(); };
  o.j.command = search ? "policy" : "chain";
  ts::ChainJudgement r = ts::judge_chains(set, schedules, o.c, o.j);
  r.search = search;
  if (o.json.on()) o.json.emit(ts::chain_json(r).dump(2) + "\n");
  if (o.html.on()) o.html.emit(ts::chain_html(r));
  if (!o.json.to_stdout() && !o.html.to_stdout()) std::cout << ts::chain_text(r, ts::terminal_width()) << std::flush;
  return r.exit_code();
}

ts::cli::Registration chain_reg{
    "chain",
    "Run the block stack (the production linears, the candidate's attention in every block) over every block "
    "and denoising step of a chain set against the exact and the baseline stacks: error after each block, what "
    "it added and carried, its growth; each schedule judged by a gate on the final block's output. Exit 0 all "
    "ACCEPTed, 1 otherwise, 2 bad input",
    [](CLI::App& app) -> ts::cli::Action {
      auto o = std::make_shared<Opts>();
      add_common(app, *o);
      app.add_option("--candidate,-c", o->candidates,
                     "a schedule (repeatable): a backend spec for every block, or rules 'SPEC if COND; ...' with "
                     "COND step<K, step>=K, step=A-B, block<K, block=A-B, and `dense` for the baseline's spec")
          ->required();
      ts::cli::set_example(app, "touchstone chain set/ --candidate sol:tau=1.3 --candidate 'dense if step<2; "
                                "sol:tau=1.3' --html chain.html");
      return [o] { return run(*o, false); };
    }};

ts::cli::Registration policy_reg{
    "policy",
    "Search the schedules 'dense if step<k; BACKEND:tau=T' (k = 0 .. steps-1, every T, and all dense) for the "
    "cheapest that the gate ACCEPTs at the end, and print the frontier of cost against final error. Cost is the "
    "summed kernel attention time where it is real, else the dense-equivalent work (emulations' times are never a "
    "speed verdict). Exit 0 when one is ACCEPTed, 1 when none is, 2 bad input",
    [](CLI::App& app) -> ts::cli::Action {
      auto o = std::make_shared<Opts>();
      o->taus = {1.0, 1.3, 2.0};
      add_common(app, *o);
      ts::cli::add_number_list_option(app, "--tau", o->taus, "comma-separated thresholds");
      app.add_option("--backend", o->backend, "the routed backend kind taking tau (sol, sol_cuda)")->capture_default_str();
      app.add_option("--precision", o->precision, "its precision (bf16 | int8_qk | int8_qk_pv; empty: its default)")
          ->capture_default_str();
      ts::cli::set_example(app, "touchstone policy set/ --tau 1,1.3,2 --accuracy-only --html policy.html");
      return [o] { return run(*o, true); };
    }};

}  // namespace cmd_chain
