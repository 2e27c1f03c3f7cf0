// The HTML report: every candidate and verdict shown, text escaped, a NaN or
// missing figure shown as words and never as a plotted number, bound lines
// drawn, and every <svg> closed.
#include <cmath>
#include <limits>
#include <regex>
#include <string>

#include "catch.hpp"
#include "gates/judge_for_tests.hpp"
#include "report/markup.hpp"
#include "report/gate_report.hpp"
#include "report/svg_plot.hpp"
#include "gates/seed_support.hpp"

using namespace ts;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

std::string lower(std::string s) {
  for (auto& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return s;
}

// The <svg>...</svg> blocks, in order; a nested or unclosed <svg> fails.
std::vector<std::string> svg_blocks(const std::string& html) {
  std::vector<std::string> out;
  size_t p = 0;
  while ((p = html.find("<svg", p)) != std::string::npos) {
    const size_t end = html.find("</svg>", p);
    REQUIRE(end != std::string::npos);
    const size_t nested = html.find("<svg", p + 4);
    REQUIRE((nested == std::string::npos || nested > end));
    out.push_back(html.substr(p, end + 6 - p));
    p = end + 6;
  }
  return out;
}

// Attributes that hold coordinates or lengths: none may say NaN or inf.
std::vector<std::string> bad_coordinates(const std::string& svg) {
  static const std::regex attr(R"re(\s(x|y|x1|x2|y1|y2|cx|cy|r|width|height|points|d|viewBox)="([^"]*)")re");
  std::vector<std::string> bad;
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), attr); it != std::sregex_iterator(); ++it) {
    const std::string v = lower((*it)[2].str());
    if (v.find("nan") != std::string::npos || v.find("inf") != std::string::npos) bad.push_back((*it)[0].str());
  }
  return bad;
}

// A fixture-style run on a gate of four rules (rel_l2 and cosine vs the
// baseline, rel_l2 vs exact at most 2x the baseline's, an optional speed rule;
// its own, so that recalibrating the shipped gates leaves these plots alone)
// with a good candidate, a NaN one, one whose rel_l2 is undefined, one with an
// infinite figure and one that crashed.
GateRun synthetic_run() {
  GateRun run;
  run.gate = parse_gate(R"({"schema": "touchstone.gate/1", "name": "sage-compatible-dense-replacement",
    "baseline": "sage2", "tensor": "attention", "rules": [
    {"id": "sage_like",  "metric": "rel_l2",  "against": "baseline", "max": 0.02},
    {"id": "direction",  "metric": "cosine",  "against": "baseline", "min": 0.999},
    {"id": "vs_exact",   "metric": "rel_l2",  "against": "exact",    "max_ratio_to_baseline": 2.0},
    {"id": "not_slower", "metric": "speedup", "against": "baseline", "min": 0.95, "confidence": 0.95,
     "optional": true}]})",
                        "report_gate.json");
  run.mode = "fixture";
  run.input = "/tmp/fx<1>.h5";
  run.baseline = "sage2:preset=sm121";
  run.context = {{"fixture", "/tmp/fx<1>.h5"}, {"seed", 1}, {"baseline_vs_exact", {{"rel_l2", 0.02}}}};
  auto figures = [](std::optional<double> rel_l2, std::optional<double> cosine, double nonfinite) {
    return Figures{{"rel_l2", rel_l2}, {"cosine", cosine}, {"nonfinite", nonfinite}, {"nonfinite_ref", 0.0},
                   {"zero_fraction", 0.0}, {"zero_fraction_ref", 0.0}};
  };
  auto evidence = [&](const std::string& name, std::optional<double> vb, std::optional<double> cos,
                      std::optional<double> ve, double nonfinite) {
    Evidence ev;
    ev.candidate = name;
    ev.vs_baseline["attention"] = figures(vb, cos, nonfinite);
    ev.vs_exact["attention"] = figures(ve, cos, nonfinite);
    ev.baseline_vs_exact["attention"] = figures(0.02, 0.9998, 0);
    return ev;
  };
  Evidence good = evidence("good_kernel", 0.011, 0.9999, 0.03, 0);
  good.speed = SpeedEvidence{};
  good.speed->interval = Interval{1.5, 1.2, 1.8, 0.95, 4000, 1, 10, "paired ratios, median"};
  good.speed->candidate_ms = 2;
  good.speed->baseline_ms = 3;
  run.candidates.push_back(judge_for_test(run.gate, good, "repro good"));

  Evidence nan = evidence("nan_kernel", kNaN, kNaN, kNaN, 12);
  nan.speed = SpeedEvidence{};
  nan.speed->interval = Interval{kNaN, kNaN, kInf, 0.95, 4000, 1, 10, "paired ratios, median"};
  run.candidates.push_back(judge_for_test(run.gate, nan, "repro nan"));

  run.candidates.push_back(judge_for_test(run.gate, evidence("zero_reference", std::nullopt, std::nullopt, std::nullopt, 0),
                                 "repro undefined"));
  run.candidates.push_back(judge_for_test(run.gate, evidence("inf_kernel", kInf, 0.5, kInf, 0), "repro inf"));

  Evidence crashed;
  crashed.candidate = "crashed_kernel";
  crashed.error = "segfault <in> kernel & co";
  run.candidates.push_back(judge_for_test(run.gate, crashed, "repro crashed"));
  return run;
}

}  // namespace

TEST_CASE("HTML report: a standalone page naming every candidate and verdict") {
  const GateRun run = test::judge_report(test::seed_json());
  const std::string h = render_html(run);
  CHECK(h.rfind("<!DOCTYPE html>", 0) == 0);
  CHECK(h.find("</html>") != std::string::npos);
  CHECK(h.find("<title>touchstone gate sparse_acceptance</title>") != std::string::npos);
  // Nothing fetched: no scripts, links or URLs besides the SVG namespace.
  CHECK(h.find("<script") == std::string::npos);
  CHECK(h.find("<link") == std::string::npos);
  CHECK(test::occurrences(h, "http") == test::occurrences(h, "xmlns=\"http://www.w3.org/2000/svg\""));
  REQUIRE(run.candidates.size() == 4);
  for (const auto& c : run.candidates) {
    INFO(c.candidate);
    CHECK(h.find("<code>" + c.candidate + "</code>") != std::string::npos);
    // Its badge, in the summary row and over its section.
    const std::string badge = std::string("\">") + verdict_name(c.verdict) + "</span>";
    CHECK(test::occurrences(h, badge) >= 2);
  }
  CHECK(test::occurrences(h, "class=\"badge reject\"") == 2 * 3);
  CHECK(test::occurrences(h, "class=\"badge inconclusive\"") == 2 * 1);
  CHECK(h.find("0 of 4 accepted") != std::string::npos);
  // The same digits as the other reports.
  CHECK(h.find(format_number(0.6257)) != std::string::npos);
  CHECK(h.find("0.6257 FAIL") != std::string::npos);
  CHECK(render_terminal(run).find("0.6257 FAIL") != std::string::npos);
  // The rules table per candidate: one row per outcome, the reason included.
  int outcomes = 0;
  for (const auto& c : run.candidates) outcomes += static_cast<int>(c.outcomes.size());
  CHECK(test::occurrences(h, "<tr><td><code>") == outcomes);
  CHECK(h.find("missing measurement: rel_l2 vs baseline (attention)") != std::string::npos);
  CHECK(test::occurrences(h, "<pre><code>repro ") == 4);
}

TEST_CASE("HTML report: names, reasons and paths are escaped") {
  GateRun run = test::judge_report(test::seed_json());
  run.candidates[0].candidate = "<script>&\"x'";
  run.candidates[0].outcomes[0].message = "reason <b>bold</b> & more";
  run.input = "dir/<in>.json";
  run.gate.description = "a & b";
  const std::string h = render_html(run);
  CHECK(h.find("<script") == std::string::npos);
  CHECK(h.find("&lt;script&gt;&amp;&quot;x&#39;") != std::string::npos);
  CHECK(h.find("<b>bold</b>") == std::string::npos);
  CHECK(h.find("reason &lt;b&gt;bold&lt;/b&gt; &amp; more") != std::string::npos);
  CHECK(h.find("dir/&lt;in&gt;.json") != std::string::npos);
  CHECK(h.find("<p>a &amp; b</p>") != std::string::npos);
  CHECK(markup_escape("a\x01z") == "a z");

  // A long name is cut in the plots between UTF-8 characters, not inside one.
  run.candidates[1].candidate = std::string(36, 'x') + "\xc3\xa9" + std::string(20, 'y');
  const std::string cut = render_html(run);
  CHECK(cut.find(">" + std::string(36, 'x') + "...</text>") != std::string::npos);
  CHECK(cut.find("<code>" + run.candidates[1].candidate + "</code>") != std::string::npos);
}

TEST_CASE("HTML report: NaN, infinite, undefined and missing figures are words, never coordinates") {
  const GateRun run = synthetic_run();
  REQUIRE(run.candidates.size() == 5);
  CHECK(run.candidates[0].verdict == Verdict::accept);
  CHECK(run.candidates[1].verdict == Verdict::reject);
  CHECK(run.candidates[2].verdict == Verdict::inconclusive);
  CHECK(run.candidates[4].verdict == Verdict::reject);
  const std::string h = render_html(run);

  // Tables: the NaN figure as NaN, the undefined one as undefined, the
  // crashed candidate's as missing.
  CHECK(h.find("<td class=\"num gapcell\">NaN</td>") != std::string::npos);
  CHECK(h.find("<td class=\"num gapcell\">undefined</td>") != std::string::npos);
  CHECK(h.find("<td class=\"num gapcell\">missing</td>") != std::string::npos);
  CHECK(h.find("<td class=\"num gapcell\">inf</td>") != std::string::npos);
  CHECK(h.find("segfault &lt;in&gt; kernel &amp; co") != std::string::npos);

  const auto svgs = svg_blocks(h);
  // One plot per rule of the gate.
  REQUIRE(svgs.size() == run.gate.rules.size());
  for (const auto& s : svgs) {
    INFO(s);
    CHECK(bad_coordinates(s).empty());
    // Every candidate has a row in every plot: a marker or a marked gap.
    CHECK(test::occurrences(s, "<g class=\"row\">") == 5);
  }
  // The NaN rows are marked gaps that say NaN; so are the undefined and missing ones.
  const std::string& sage_like = svgs[0];
  CHECK(sage_like.find("class=\"gaptext\"") != std::string::npos);
  CHECK(sage_like.find(">NaN</text>") != std::string::npos);
  CHECK(sage_like.find(">undefined</text>") != std::string::npos);
  CHECK(sage_like.find(">missing</text>") != std::string::npos);
  CHECK(sage_like.find(">inf</text>") != std::string::npos);
  CHECK(test::occurrences(sage_like, "<circle class=\"dot") == 1);  // only the finite figure is a dot
  // The speed plot: the good candidate's interval as whiskers, the NaN one a gap.
  const std::string& speed = svgs[3];
  CHECK(test::occurrences(speed, "class=\"whisker\"") == 1);
  CHECK(speed.find(">NaN</text>") != std::string::npos);
}

TEST_CASE("HTML report: bound lines, including limits relative to the baseline") {
  const GateRun run = synthetic_run();
  const auto svgs = svg_blocks(render_html(run));
  REQUIRE(svgs.size() == 4);
  // sage_like max 0.02, direction min 0.999, not_slower min 0.95.
  CHECK(svgs[0].find("<line class=\"bound\"") != std::string::npos);
  CHECK(svgs[0].find(">max 0.02</text>") != std::string::npos);
  CHECK(svgs[1].find(">min 0.999</text>") != std::string::npos);
  CHECK(svgs[3].find(">min 0.95</text>") != std::string::npos);
  // vs_exact: max_ratio_to_baseline 2 with the baseline at 0.02 is a limit of
  // 0.04, drawn on the rows of candidates that have it.
  const RuleOutcome& vs_exact = run.candidates[0].outcomes[2];
  REQUIRE(vs_exact.id == "vs_exact");
  REQUIRE(vs_exact.limit.has_value());
  CHECK(*vs_exact.limit == Approx(0.04));
  CHECK(test::occurrences(svgs[2], "<line class=\"bound\"") >= 1);
  // The seed's gate: a max and a min, one line each.
  const auto seed = svg_blocks(render_html(test::judge_report(test::seed_json())));
  REQUIRE(seed.size() == 2);
  CHECK(test::occurrences(seed[0], "<line class=\"bound\"") == 1);
  CHECK(seed[0].find(">max 0.05</text>") != std::string::npos);
  CHECK(test::occurrences(seed[1], "<line class=\"bound\"") == 1);
  CHECK(seed[1].find(">min 1</text>") != std::string::npos);
  for (const auto& s : seed) CHECK(bad_coordinates(s).empty());
}

TEST_CASE("HTML report: every <svg> opened is closed") {
  for (const GateRun& run : {synthetic_run(), test::judge_report(test::seed_json())}) {
    const std::string h = render_html(run);
    CHECK(test::occurrences(h, "<svg ") == test::occurrences(h, "</svg>"));
    CHECK(test::occurrences(h, "<svg ") > 0);
    CHECK(test::occurrences(h, "<figure>") == test::occurrences(h, "</figure>"));
    CHECK(test::occurrences(h, "<table") == test::occurrences(h, "</table>"));
    CHECK(svg_blocks(h).size() == static_cast<size_t>(test::occurrences(h, "<svg ")));
  }
}

TEST_CASE("HTML report: plot axes") {
  const svg::Axis log = svg::Axis::fit({0.011, 0.6257, kNaN, kInf});
  CHECK(log.log);
  CHECK(log.lo == -2);
  CHECK(log.hi == 0);
  // Two decades: ticks at 1, 2 and 5 of each.
  REQUIRE(log.ticks().size() == 7);
  CHECK(log.ticks()[0].label == "0.01");
  CHECK(log.ticks()[2].label == "0.05");
  CHECK(log.ticks()[6].label == "1");
  CHECK(log.ticks()[6].at == Approx(1));
  // Ends at 1-2-5 steps: 0.54..0.64 spans 0.5..1, not a whole decade.
  const svg::Axis tight = svg::Axis::fit({0.54, 0.64});
  CHECK(tight.lo == Approx(std::log10(0.5)));
  CHECK(tight.hi == Approx(0));
  // Near the top of the double range no tick overflows to infinity.
  for (const auto& t : svg::Axis::fit({1e-300, 1.7e308}).ticks()) {
    CHECK(std::isfinite(t.at));
    CHECK(lower(t.label).find("inf") == std::string::npos);
  }
  // A zero stays on a log axis, on a floor a decade under the smallest
  // positive figure, and the axis says so; only a negative value makes it linear.
  const svg::Axis zero = svg::Axis::fit({0.0, 0.021, 0.6});
  CHECK(zero.log);
  CHECK(zero.has_floor);
  CHECK(zero.lo == Approx(-3));
  CHECK(zero.on_floor(0.0));
  CHECK_FALSE(zero.on_floor(0.021));
  CHECK(zero.frac(0.0) == 0);
  CHECK(zero.ticks().front().label == "\u2264 0.001");
  CHECK(zero.note().find("0 and values <= 0.001 drawn at the floor") != std::string::npos);
  const svg::Axis lin = svg::Axis::fit({-0.5, 3.0});
  CHECK_FALSE(lin.log);
  CHECK(lin.lo <= -0.5);
  CHECK(lin.hi >= 3);
  for (const auto& t : lin.ticks()) CHECK(std::isfinite(t.at));
  CHECK(lin.ticks().size() >= 3);
  // 1 - cos: 0.9996 and a 0.999 bound a factor 2.5 apart on the axis, not one pixel.
  const svg::Axis cos = svg::Axis::fit({0.9996, 0.999, 0.8484, 0.9998}, svg::Scale::one_minus);
  CHECK(cos.log);
  CHECK(cos.one_minus);
  CHECK((cos.frac(0.999) - cos.frac(0.9996)) * 700 > 50);  // pixels on a 700-pixel axis
  CHECK(cos.frac(0.8484) > cos.frac(0.999));                // worse lies right, as for rel_l2
  bool labelled = false;
  for (const auto& t : cos.ticks()) labelled |= t.label == "0.999";
  CHECK(labelled);
  // ulp counts up to 1e19 with a 0 among them: a log axis, labels every few decades, finite.
  const svg::Axis ulp = svg::Axis::fit({0.0, 3.0, 1e19});
  CHECK(ulp.log);
  CHECK(ulp.ticks().size() >= 3);
  for (const auto& t : ulp.ticks()) CHECK(std::isfinite(t.at));
  // Less than a decade: still at least three labelled ticks.
  CHECK(svg::Axis::fit({1.1, 1.9}).ticks().size() >= 3);
  const svg::Axis none = svg::Axis::fit({kNaN});
  CHECK_FALSE(none.log);
  CHECK(none.hi > none.lo);
  CHECK(none.frac(0.5) == Approx(0.5));
}

TEST_CASE("compare HTML: metrics, and rel_l2 by head, query block and frame with gaps") {
  CompareReport r;
  r.fixture = "fx&.h5";
  r.a_name = "sol<tau>";
  r.a_dataset = "/outputs/sol<tau>/attention";
  r.a_dtype = "float32";
  r.b_name = "exact";
  r.b_dataset = "/outputs/exact/attention";
  r.b_dtype = "float64";
  r.shape = "[256, 4, 8]";
  r.metrics.rel_l2 = 0.123456789;
  r.metrics.cosine = std::nullopt;
  r.metrics.rel_l1 = kNaN;
  auto set = [](std::optional<double> v) {
    MetricSet m;
    m.rel_l2 = v;
    return m;
  };
  MetricBreakdown b;
  b.per_head = {set(0.1), set(0.2), set(kNaN), set(0.3), set(std::nullopt), set(0.5), set(0.4)};
  for (int i = 0; i < 300; ++i) b.per_query_block.push_back(set(0.01 * (1 + i % 7)));
  b.per_frame = {set(0.0), set(0.2), set(0.0)};
  b.cond = set(0.05);
  r.breakdown = b;
  const std::string h = render_compare_html(r);
  CHECK(h.rfind("<!DOCTYPE html>", 0) == 0);
  CHECK(h.find("<code>sol&lt;tau&gt;</code>") != std::string::npos);
  CHECK(h.find("fx&amp;.h5") != std::string::npos);
  CHECK(h.find(format_number(0.123456789, 6)) != std::string::npos);
  CHECK(h.find("<td class=\"num gapcell\">NaN</td>") != std::string::npos);        // rel_l1
  CHECK(h.find("<td class=\"num gapcell\">undefined</td>") != std::string::npos);  // cosine
  CHECK(h.find("conditioning tokens: rel_l2 0.05") != std::string::npos);
  const auto svgs = svg_blocks(h);
  REQUIRE(svgs.size() == 4);  // rel_l2 per head, query block, frame; |gain - 1| per head
  for (const auto& s : svgs) {
    CHECK(bad_coordinates(s).empty());
    // Groups are points of their own: never joined into a series.
    CHECK(s.find("<polyline") == std::string::npos);
  }
  // Heads: the NaN and the undefined head are marked on the axis, the rest points with values.
  CHECK(test::occurrences(svgs[0], "class=\"gapmark\"") == 2);
  CHECK(svgs[0].find("<title>2: NaN</title>") != std::string::npos);
  CHECK(svgs[0].find("<title>4: undefined</title>") != std::string::npos);
  CHECK(test::occurrences(svgs[0], "<circle class=\"dot group") == 5);
  CHECK(svgs[0].find(">0.3</text>") != std::string::npos);
  CHECK(h.find("marked x: 2") != std::string::npos);
  CHECK(h.find("marked x: 4") != std::string::npos);
  // 300 query blocks: a point each, no value labels but the worst's.
  CHECK(test::occurrences(svgs[1], "<circle class=\"dot group") == 300);
  CHECK(test::occurrences(svgs[1], "class=\"value\"") == 1);
  CHECK(svgs[1].find("log10 axis") != std::string::npos);
  // Zeros are figures: on the log axis' stated floor, open markers.
  CHECK(svgs[2].find("drawn at the floor") != std::string::npos);
  CHECK(test::occurrences(svgs[2], "dot group floor") == 2);
  CHECK(test::occurrences(svgs[2], "class=\"gapmark\"") == 0);
  CHECK(h.find("No noise floor drawn") != std::string::npos);

  // With a noise floor: a grey tick per group under each point.
  MetricBreakdown f = b;
  for (auto& m : f.per_head) m.rel_l2 = 0.01;
  r.floor = f;
  r.floor_name = "sage2_sm121";
  const auto with_floor = svg_blocks(render_compare_html(r));
  CHECK(test::occurrences(with_floor[0], "<line class=\"noisefloor\"") == 7 + 1);  // 7 heads + the legend
  CHECK(with_floor[0].find("sage2_sm121 (noise floor)") != std::string::npos);
  r.floor.reset();

  r.breakdown.reset();
  r.breakdown_note = "no breakdown: it needs [S, H, D] tensors, these are [4, 4]";
  const std::string flat = render_compare_html(r);
  CHECK(flat.find("<svg") == std::string::npos);
  CHECK(flat.find("no breakdown: it needs [S, H, D] tensors") != std::string::npos);
}

TEST_CASE("HTML report: the noise floor, the cosine as 1 - cos, and a summary that wraps") {
  const GateRun run = synthetic_run();
  const std::string h = render_html(run);
  const auto svgs = svg_blocks(h);
  // sage_like: the baseline's own rel_l2 vs exact (0.02 in the context) drawn grey.
  CHECK(svgs[0].find("<line class=\"noisefloor\"") != std::string::npos);
  CHECK(svgs[0].find("baseline vs exact 0.02") != std::string::npos);
  // vs_exact: the floor from the resolved limit (2 x 0.02).
  CHECK(svgs[2].find("baseline vs exact 0.02") != std::string::npos);
  CHECK(svgs[1].find("1 - cosine") != std::string::npos);
  // Rule columns are headed by their ids, breakable at underscores.
  CHECK(h.find("<th title=\"sage_like: rel_l2 vs baseline &lt;= 0.02\">sage_<wbr>like<br>") != std::string::npos);
}

TEST_CASE("svg plots: heatmap, x-y curve and Pareto front") {
  svg::Heatmap m;
  m.title = "rel_l2 by head x query block";
  m.row_label = "head";
  m.col_label = "query block";
  m.cells = {{0.01, 0.02, kNaN}, {0.0, std::nullopt, 0.5}};
  m.highlight_above = 0.1;
  const std::string s = svg::heatmap(m);
  CHECK(bad_coordinates(s).empty());
  CHECK(test::occurrences(s, "<rect class=\"cell") == 6);
  CHECK(test::occurrences(s, "cell nonfinite") == 1);
  CHECK(test::occurrences(s, "cell undefined") == 1);
  CHECK(test::occurrences(s, " hot\"") == 1);
  CHECK(s.find("head 1, query block 2: 0.5") != std::string::npos);
  CHECK(svg_heatmap(m) == s);

  svg::XYPlot p;
  p.title = "scan";
  p.x_label = "seq";
  p.y_label = "rel_l2";
  p.series = {{"rel_l2", "s0", {{1000, 1e-3, "", ""}, {100000, kNaN, "", ""}, {3000, 2e-3, "a", ""}}, true}};
  p.x_spans = {{50000, 60000, "cliff"}};
  p.x_bounds = {{0.05, "max"}};
  const std::string xy = svg::xy_plot(p);
  CHECK(bad_coordinates(xy).empty());
  CHECK(test::occurrences(xy, "<polyline") == 1);
  CHECK(test::occurrences(xy, "class=\"gapmark\"") == 1);
  CHECK(test::occurrences(xy, "<rect class=\"span\"") == 1);
  CHECK(xy.find(">a</text>") != std::string::npos);
}

TEST_CASE("reports of a NaN candidate say its non-finite values once: JUnit and HTML as terminal and Markdown") {
  GateRun run = synthetic_run();
  // The NaN candidate alone, so that every mention is its own.
  run.candidates = {run.candidates[1]};
  const CandidateVerdict& nan = run.candidates[0];
  REQUIRE(nan.verdict == Verdict::reject);
  size_t nan_failed = 0;
  for (const auto& o : nan.outcomes) nan_failed += !o.builtin && o.status == RuleStatus::fail && o.metric != "speedup";
  REQUIRE(nan_failed == 3);  // every accuracy rule: NaN never passes
  const std::string said = "non-finite values";
  // finite_guard's count, once in each report (JUnit: its one test case, message and body).
  const std::string junit = render_junit(run);
  CHECK(test::occurrences(junit, said) == 2);
  CHECK(test::occurrences(junit, "finite_guard\">\n      <failure type=\"REJECT\" message=\"12 " + said) == 1);
  // The rules it failed are still failures, each pointing to the count.
  CHECK(test::occurrences(junit, "message=\"NaN/Inf in the candidate: see finite_guard\"") == 3);
  CHECK(test::occurrences(junit, "<failure type=\"REJECT\"") == 5);  // and the speed rule's NaN interval
  const std::string html = render_html(run);
  CHECK(test::occurrences(html, said) == 1);
  CHECK(test::occurrences(html, "<td>NaN/Inf in the candidate: see finite_guard</td>") == 3);
  CHECK(test::occurrences(render_markdown(run), said) == 2);  // the rules' line and the count
  CHECK(test::occurrences(render_terminal(run, 100), said) == 2);
}
