// The chain's terminal table and HTML page (chain_text / chain_html):
// error after each block of each step, what each block added and carried,
// the frontier of a policy search, then the gate's own report.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "report/chain_report.hpp"
#include "report/markup.hpp"
#include "report/gate_report.hpp"
#include "report/svg_plot.hpp"

namespace ts {
namespace {

std::string rnum(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return "inf";
  char b[32];
  std::snprintf(b, sizeof b, "%.3g", v);
  return b;
}
std::string rnum(const std::optional<double>& v) { return v ? rnum(*v) : "-"; }

std::string rcut(std::string s, size_t w) {
  if (s.size() > w) s = s.substr(0, w - 1) + "~";
  return s;
}

std::string rrow(const std::vector<std::string>& cols, const std::vector<size_t>& w) {
  std::string out;
  for (size_t i = 0; i < cols.size(); ++i) {
    std::string c = rcut(cols[i], w[i]);
    out += (i == 2 ? c + std::string(w[i] - c.size(), ' ') : std::string(w[i] - c.size(), ' ') + c);
    out += i + 1 < cols.size() ? " " : "";
  }
  return out + "\n";
}

std::string verdict_of(const ChainJudgement& J, size_t i) { return verdict_name(J.cases.run.candidates[i].verdict); }

// The block-by-block table of one schedule.
std::string cell_table(const ChainJudgement& J, size_t i, int width) {
  const ChainResult& ch = J.chain.chains[i];
  std::vector<size_t> w = {4, 5, 18, 8, 8, 8, 7, 8, 8, 9};
  const size_t fixed = 4 + 5 + 8 * 3 + 7 + 8 * 2 + 9 + 10;
  w[2] = static_cast<size_t>(std::max<int>(10, width - static_cast<int>(fixed)));
  std::ostringstream o;
  o << rrow({"step", "block", "attention", "e_in", "own", "carried", "growth", "e_out", "vs_exact", "attn_ms"}, w);
  for (const auto& c : ch.cells)
    o << rrow({std::to_string(c.step), std::to_string(c.block), c.dense ? "dense" : c.spec, rnum(c.in_error), rnum(c.own),
              rnum(c.carried), rnum(c.growth), rnum(c.vs_baseline.rel_l2), rnum(c.vs_exact.rel_l2), rnum(c.attention_ms)},
             w);
  return o.str();
}

const ChainCell* worst_own(const ChainResult& ch) {
  const ChainCell* w = nullptr;
  for (const auto& c : ch.cells)
    if (!w || c.own > w->own || std::isnan(c.own)) w = &c;
  return w;
}

}  // namespace

std::string chain_text(const ChainJudgement& J, int width) {
  const ChainRun& run = J.chain;
  std::ostringstream o;
  o << "chain set " << run.set.label << ": " << run.set.blocks << " blocks x " << run.set.steps << " steps, "
    << (run.set.dt ? "step rule x0' = x0 + " + rnum(*run.set.dt) + " (out - x0)" : std::string("each step from its stored x"))
    << "\n";
  o << "stacks: exact " << run.opts.exact << " (fp64 linears); baseline " << run.opts.baseline << " and candidates ("
    << run.opts.linear << (run.opts.linear == "nvfp4" ? "-" + run.opts.recipe : "") << " linears, " << run.opts.block_backend
    << "); " << run.block_runs << " block runs in " << rnum(run.wall_s) << " s\n";
  int matches = 0;
  for (const auto& b : run.baseline) matches += b.matches_fixture;
  o << "baseline stack's block inputs equal the stored /block/x at " << matches << " of " << run.baseline.size()
    << " cells; baseline vs exact at the end: " << rnum(run.baseline.back().vs_exact.rel_l2) << "\n";
  o << "e_in: the block's input against the baseline stack's; own: the block on the baseline's input; carried: what\n"
       "the incoming error becomes (growth = carried / e_in); e_out <= own + carried (rel_l2 against the baseline)\n";
  if (!J.search) {
    for (size_t i = 0; i < run.chains.size(); ++i) {
      const ChainResult& ch = run.chains[i];
      o << "\nschedule '" << ch.schedule.text << "': " << verdict_of(J, i) << "\n" << cell_table(J, i, width);
      if (!ch.error.empty()) o << "stopped: " << ch.error << "\n";
      if (const ChainCell* w = worst_own(ch); w && w->own > 0)
        o << "largest own error: block " << w->block << " of step " << w->step << " (own " << rnum(w->own) << ", "
          << w->spec << ")\n";
      o << "attention " << rnum(ch.attention_ms()) << " ms against the baseline's " << rnum(run.baseline_attention_ms())
        << " ms" << (J.time_is_real[i] ? "" : " (emulation time: not a speed verdict)") << "; dense-equivalent work "
        << rnum(ch.work()) << "\n";
    }
  } else {
    const bool real = std::any_of(J.time_is_real.begin(), J.time_is_real.end(), [](bool b) { return b; });
    std::vector<size_t> w = {6, 7, 0, 9, 9, 9, 12};
    w[2] = static_cast<size_t>(std::max<int>(16, width - (6 + 7 + 9 * 3 + 12 + 6)));
    o << "\nschedules, cheapest first (" << (real ? "summed kernel attention time" : "dense-equivalent work; times are emulations', not a speed verdict")
      << "):\n";
    o << rrow({"front", "work", "schedule", "e_out", "vs_exact", "attn_ms", "verdict"}, w);
    for (size_t i : J.ranked) {
      const ChainResult& ch = run.chains[i];
      const bool front = std::find(J.frontier.begin(), J.frontier.end(), i) != J.frontier.end();
      const bool ok = ch.error.empty() && ch.cells.size() == run.baseline.size();
      o << rrow({front ? "*" : "", rnum(ch.work()), ch.schedule.text, ok ? rnum(ch.last().vs_baseline.rel_l2) : "-",
                ok ? rnum(ch.last().vs_exact.rel_l2) : "-", rnum(ch.attention_ms()), verdict_of(J, i)},
               w);
    }
    if (J.chosen) {
      o << "\nchosen: '" << run.chains[*J.chosen].schedule.text << "' (the cheapest ACCEPTed)\n"
        << cell_table(J, *J.chosen, width);
    } else {
      o << "\nchosen: none (no schedule was ACCEPTed)\n";
    }
  }
  o << "\n" << render_terminal(J.cases.run, width);
  return o.str();
}

std::string chain_html(const ChainJudgement& J) {
  const ChainRun& run = J.chain;
  std::ostringstream b;
  b << "<p>chain set <code>" << markup_escape(run.set.label) << "</code>: " << run.set.blocks << " blocks x "
    << run.set.steps << " steps; baseline <code>" << markup_escape(run.opts.baseline) << "</code>, exact <code>"
    << markup_escape(run.opts.exact) << "</code>. Error is rel_l2 of each block's output against the baseline stack's.</p>\n";
  std::vector<size_t> shown;
  if (J.search) {
    svg::XYPlot f;
    f.title = "schedules: final error against dense-equivalent work";
    f.x_label = "dense-equivalent work";
    f.y_label = "rel_l2 vs baseline, last block of the last step";
    f.x_scale = svg::Scale::linear;
    f.y_scale = svg::Scale::log;
    svg::XYSeries all{"schedules", "s0", {}, false, true};
    svg::XYSeries front{"frontier", "s1", {}, true, true};
    for (size_t i = 0; i < run.chains.size(); ++i) {
      const ChainResult& ch = run.chains[i];
      if (ch.cells.size() != run.baseline.size()) continue;
      const bool acc = J.cases.run.candidates[i].verdict == Verdict::accept;
      all.points.push_back({ch.work(), ch.last().vs_baseline.rel_l2, "", acc ? "pass" : "fail"});
    }
    for (size_t i : J.frontier)
      front.points.push_back({run.chains[i].work(), run.chains[i].last().vs_baseline.rel_l2, run.chains[i].schedule.text, ""});
    f.series = {all, front};
    for (const auto& r : J.cases.run.gate.rules)
      if (r.metric == "rel_l2" && r.against == "baseline" && r.max) f.y_bounds.push_back({*r.max, r.id});
    b << svg::xy_plot(f);
    if (J.chosen) shown.push_back(*J.chosen);
    if (!J.frontier.empty() && (!J.chosen || J.frontier.front() != *J.chosen)) shown.push_back(J.frontier.front());
  } else {
    for (size_t i = 0; i < run.chains.size(); ++i) shown.push_back(i);
  }
  for (size_t i : shown) {
    const ChainResult& ch = run.chains[i];
    b << "<h2>" << markup_escape(ch.schedule.text) << " &mdash; " << verdict_of(J, i) << "</h2>\n";
    svg::XYPlot p;
    p.title = "error after each block, one line per step";
    p.x_label = "block";
    p.y_label = "rel_l2 vs baseline";
    p.x_scale = svg::Scale::linear;  // block indices start at 0
    p.y_scale = svg::Scale::log;
    for (int s = 0; s < run.set.steps; ++s) {
      svg::XYSeries ser{"step " + std::to_string(s), "s" + std::to_string(s % 6), {}, true, true};
      for (const auto& c : ch.cells)
        if (c.step == s) ser.points.push_back({static_cast<double>(c.block), c.vs_baseline.rel_l2, "", ""});
      p.series.push_back(ser);
    }
    b << svg::xy_plot(p);
    svg::Heatmap h;
    h.title = "own error of each block (the block on the baseline's input)";
    h.row_label = "step";
    h.col_label = "block";
    h.value_label = "own rel_l2";
    h.cells.assign(static_cast<size_t>(run.set.steps), std::vector<std::optional<double>>(static_cast<size_t>(run.set.blocks)));
    for (const auto& c : ch.cells)
      h.cells[static_cast<size_t>(c.step)][static_cast<size_t>(c.block)] =
          c.own > 0 ? std::optional<double>(c.own) : std::nullopt;
    b << svg::heatmap(h);
    b << "<pre>" << markup_escape(cell_table(J, i, 110)) << "</pre>\n";
  }
  b << "<h2>verdicts</h2>\n<pre>" << markup_escape(render_terminal(J.cases.run, 110)) << "</pre>\n";
  return render_page(J.search ? "touchstone policy" : "touchstone chain", b.str());
}

}  // namespace ts
