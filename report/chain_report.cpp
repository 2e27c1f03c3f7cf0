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

// Error after each block, a line per step; past six steps (the colours there are) six lines
// spread from the first step to the last, and the title says which.
std::string steps_plot(const ChainRun& run, const ChainResult& ch) {
  std::vector<int> steps;
  const int n = run.set.steps, lines = std::min(n, 6);
  for (int k = 0; k < lines; ++k) {
    const int s = lines == 1 ? 0 : static_cast<int>(std::lround(static_cast<double>(k) * (n - 1) / (lines - 1)));
    if (steps.empty() || steps.back() != s) steps.push_back(s);
  }
  svg::XYPlot p;
  p.title = "error after each block, one line per step";
  if (lines < n) {
    p.title += " (steps";
    for (int s : steps) p.title += " " + std::to_string(s);
    p.title += " of 0-" + std::to_string(n - 1) + ")";
  }
  p.x_label = "block";
  p.y_label = "rel_l2 vs baseline" + (lines < n ? std::string(", ") + std::to_string(lines) + " of " + std::to_string(n) + " steps" : "");
  p.x_scale = svg::Scale::integer;  // block indices: no tick between two blocks
  p.y_scale = svg::Scale::log;
  for (size_t k = 0; k < steps.size(); ++k) {
    svg::XYSeries ser{"step " + std::to_string(steps[k]), "s" + std::to_string(k), {}, true, true};
    for (const auto& c : ch.cells)
      if (c.step == steps[k]) ser.points.push_back({static_cast<double>(c.block), c.vs_baseline.rel_l2, "", ""});
    p.series.push_back(ser);
  }
  return svg::xy_plot(p);
}

bool finished(const ChainRun& run, const ChainResult& ch) {
  return ch.error.empty() && ch.cells.size() == run.baseline.size();
}

// policy: final error against work, each schedule coloured by its verdict and labelled by its rank
// in the table below (schedules that end at one point share a label), the frontier as a line.
std::string policy_plot(const ChainJudgement& J) {
  const ChainRun& run = J.chain;
  svg::XYPlot f;
  f.title = "schedules: final error against dense-equivalent work";
  f.x_label = "dense-equivalent work";
  f.y_label = "rel_l2 vs baseline, last block of the last step";
  f.x_scale = svg::Scale::linear;
  f.y_scale = svg::Scale::log;
  const std::pair<Verdict, const char*> kinds[] = {
      {Verdict::accept, "pass"}, {Verdict::reject, "fail"}, {Verdict::inconclusive, "open"}, {Verdict::mistrusted, "na"}};
  // owner[i]: the best-ranked schedule ending where schedule i ends, which carries the shared label.
  auto end_of = [&](size_t i) { return std::make_pair(run.chains[i].work(), run.chains[i].last().vs_baseline.rel_l2); };
  std::vector<std::string> labels(run.chains.size());
  std::vector<size_t> owner(run.chains.size());
  for (size_t r = 0; r < J.ranked.size(); ++r) {
    const size_t i = J.ranked[r];
    if (!finished(run, run.chains[i])) continue;
    owner[i] = i;
    for (size_t q = 0; q < r; ++q)
      if (finished(run, run.chains[J.ranked[q]]) && end_of(J.ranked[q]) == end_of(i)) {
        owner[i] = J.ranked[q];
        break;
      }
    labels[owner[i]] += (labels[owner[i]].empty() ? "" : ",") + std::to_string(r + 1);
  }
  for (const auto& [verdict, css] : kinds) {
    svg::XYSeries ser{verdict_name(verdict), css, {}, false, true};
    for (size_t i = 0; i < run.chains.size(); ++i)
      if (finished(run, run.chains[i]) && J.cases.run.candidates[i].verdict == verdict)
        ser.points.push_back({run.chains[i].work(), run.chains[i].last().vs_baseline.rel_l2,
                              owner[i] == i ? labels[i] : "", ""});
    if (!ser.points.empty()) f.series.push_back(ser);
  }
  svg::XYSeries front{"frontier", "front", {}, true, false};
  for (size_t i : J.frontier) front.points.push_back({run.chains[i].work(), run.chains[i].last().vs_baseline.rel_l2, "", ""});
  f.series.insert(f.series.begin(), front);
  for (const auto& r : J.cases.run.gate.rules)
    if (r.metric == "rel_l2" && r.against == "baseline" && r.max) f.y_bounds.push_back({*r.max, r.id});
  return svg::xy_plot(f);
}

// The ranked schedules, numbered as the plot labels them.
std::string policy_table(const ChainJudgement& J) {
  const ChainRun& run = J.chain;
  std::ostringstream t;
  t << "<div class=\"wide\"><table class=\"ranked\"><tr><th>#</th><th>frontier</th><th>work</th><th>schedule</th>"
       "<th>e_out vs baseline</th><th>vs exact</th><th>attention ms</th><th>verdict</th></tr>\n";
  for (size_t r = 0; r < J.ranked.size(); ++r) {
    const size_t i = J.ranked[r];
    const ChainResult& ch = run.chains[i];
    const bool ok = finished(run, ch);
    const bool front = std::find(J.frontier.begin(), J.frontier.end(), i) != J.frontier.end();
    t << "<tr><td class=\"num\">" << r + 1 << "</td><td>" << (front ? "*" : "") << "</td><td class=\"num\">"
      << rnum(ch.work()) << "</td><td><code>" << markup_escape(ch.schedule.text) << "</code></td><td class=\"num\">"
      << (ok ? rnum(ch.last().vs_baseline.rel_l2) : "-") << "</td><td class=\"num\">"
      << (ok ? rnum(ch.last().vs_exact.rel_l2) : "-") << "</td><td class=\"num\">" << rnum(ch.attention_ms())
      << (J.time_is_kernel[i] ? "" : J.time_is_real[i] ? " (emulation, judged)" : " (emulation)") << "</td><td>"
      << verdict_of(J, i) << "</td></tr>\n";
  }
  t << "</table></div>\n";
  return t.str();
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
        << " ms" << (J.time_is_kernel[i] ? "" : " (" + J.time_note(i) + ")") << "; dense-equivalent work "
        << rnum(ch.work()) << "\n";
    }
  } else {
    const bool real = std::any_of(J.time_is_real.begin(), J.time_is_real.end(), [](bool b) { return b; });
    const bool kernel = std::any_of(J.time_is_kernel.begin(), J.time_is_kernel.end(), [](bool b) { return b; });
    std::vector<size_t> w = {6, 7, 0, 9, 9, 9, 12};
    w[2] = static_cast<size_t>(std::max<int>(16, width - (6 + 7 + 9 * 3 + 12 + 6)));
    o << "\nschedules, cheapest first ("
      << (kernel ? "summed kernel attention time"
          : real ? "summed attention time of emulations, judged as the gate's time_emulations asks"
                 : "dense-equivalent work; times are emulations', not a speed verdict")
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
    b << policy_plot(J) << policy_table(J);
    if (J.chosen) shown.push_back(*J.chosen);
    if (!J.frontier.empty() && (!J.chosen || J.frontier.front() != *J.chosen)) shown.push_back(J.frontier.front());
  } else {
    for (size_t i = 0; i < run.chains.size(); ++i) shown.push_back(i);
  }
  for (size_t i : shown) {
    const ChainResult& ch = run.chains[i];
    b << "<h2>" << markup_escape(ch.schedule.text) << " &mdash; " << verdict_of(J, i) << "</h2>\n";
    b << steps_plot(run, ch);
    svg::Heatmap h;
    h.title = "own error of each block (the block on the baseline's input)";
    h.row_label = "step";
    h.col_label = "block";
    h.value_label = "own rel_l2";
    // A cell that adds nothing (dense on the baseline's stream) is a 0, not an undefined cell.
    h.cells.assign(static_cast<size_t>(run.set.steps), std::vector<std::optional<double>>(static_cast<size_t>(run.set.blocks)));
    for (const auto& c : ch.cells) h.cells[static_cast<size_t>(c.step)][static_cast<size_t>(c.block)] = c.own;
    b << svg::heatmap(h);
    b << "<pre>" << markup_escape(cell_table(J, i, 110)) << "</pre>\n";
  }
  b << "<h2>verdicts</h2>\n<pre>" << markup_escape(render_terminal(J.cases.run, 110)) << "</pre>\n";
  return render_page(J.search ? "touchstone policy" : "touchstone chain", b.str());
}

}  // namespace ts
