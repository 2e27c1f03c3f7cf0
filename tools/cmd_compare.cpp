// touchstone compare F A B: the metrics of docs/metrics.md between two tensors of a
// fixture (A the candidate, B the reference), with --breakdown the worst heads,
// query blocks and frames, with --html a page plotting every head, query block
// and frame; --stages hands over to the block's stage comparison.
#include <cmath>
#include <cstdio>
#include <iostream>
#include <memory>

#include "core/error.hpp"
#include "fixtures/fixture.hpp"
#include "gates/metrics.hpp"
#include "kernels_under_test/registry.hpp"
#include "report/gate_report.hpp"
#include "report/stage_report.hpp"
#include "tools/command.hpp"
#include "drivers/stage_comparison.hpp"

namespace cmd_compare {

struct Opts {
  std::string fixture, a, b, gate, exact = "auto", floor;
  ts::cli::ReportTarget json, html, junit, markdown;
  bool breakdown = false, stages = false;
  int top = 5;
};

// "stored:NAME" is NAME, the spec by which gate, sweep and triage name the
// same stored output, so that a name copied from their reports works here.
std::string output_name(const std::string& arg) {
  const auto spec = ts::BackendSpec::try_parse(arg);
  return spec && spec->is_stored() ? spec->argument() : arg;
}

// "exact" -> the stored exact output (/outputs/exact or /outputs/exact_cuda,
// whichever is there; --exact exact_cuda prefers that one), "observed" ->
// /attention/observed, another bare name -> /outputs/NAME/attention, a path
// starting with / as is.
std::string exact_spec;  // set once per run from --exact
std::string dataset_of(const std::string& fixture, const std::string& arg) {
  const std::string name = output_name(arg);
  if (!name.empty() && name[0] == '/') return name;
  if (name == "observed") return "/attention/observed";
  if (name == "exact") {
    std::vector<std::string> names = {"exact", "exact_cuda"};
    if (exact_spec == "exact_cuda") std::swap(names[0], names[1]);
    for (const auto& n : names)
      if (ts::has_dataset(fixture, "/outputs/" + n + "/attention")) return "/outputs/" + n + "/attention";
  }
  return "/outputs/" + name + "/attention";
}

// Outputs as stored (no doubles: compare only reduces them), other datasets as values.
ts::HeldTensor read(const std::string& fixture, const std::string& name) {
  const std::string ds = dataset_of(fixture, name);
  if (!ts::has_dataset(fixture, ds)) {
    if (name[0] != '/' && name.find(':') != std::string::npos && !ts::is_stored_spec(name))
      throw ts::InputError("'" + name + "' is a backend spec; compare reads stored tensors (stored:NAME, an "
                           "/outputs name, exact, observed or a dataset path): store it first with "
                           "touchstone reference F --backend ..., or triage it with touchstone triage F "
                           "--candidate " + name);
    std::string outs;
    for (const auto& n : ts::list_group(fixture, "/outputs")) outs += (outs.empty() ? "" : ", ") + n;
    throw ts::InputError(fixture + ": no dataset " + ds + " (for '" + name + "'; outputs: " +
                         (outs.empty() ? "none" : outs) + ")" +
                         (output_name(name) == "exact" ? "; store one with touchstone reference F --backend exact (or exact_cuda)" : ""));
  }
  ts::HeldTensor t;
  if (ds.rfind("/outputs/", 0) == 0) t.stored = ts::read_stored(fixture, ds);
  else t.dense = ts::read_tensor(fixture, ds);
  return t;
}

std::string show(const std::optional<double>& v) {
  if (!v) return "undefined";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", *v);
  return buf;
}

int run(const Opts& o) {
  if (o.stages) {
    ts::StageComparisonOptions so;
    so.gate = o.gate;
    so.exact = o.exact == "auto" ? "" : o.exact;
    const ts::StageComparison c = ts::compare_stages(o.fixture, output_name(o.a), output_name(o.b), so);
    o.json.emit(ts::stage_json(c).dump(2) + "\n");
    o.junit.emit(ts::render_junit(c.run));
    o.markdown.emit(ts::render_markdown(c.run));
    o.html.emit(ts::render_html(c.run));
    if (!o.json.to_stdout() && !o.junit.to_stdout() && !o.markdown.to_stdout() && !o.html.to_stdout())
      std::cout << ts::render_stage_table(c) << std::flush;
    return c.exit_code();
  }
  if (!o.gate.empty()) throw ts::InputError("--gate applies to --stages only");
  if (o.junit.on() || o.markdown.on()) throw ts::InputError("--junit and --markdown apply to --stages (a judged comparison)");
  if (o.exact != "auto" && o.exact != "exact" && o.exact != "exact_cuda")
    throw ts::InputError("--exact: without --stages it picks which stored exact output 'exact' means: exact or exact_cuda");
  exact_spec = o.exact;
  if (!o.floor.empty() && !o.html.on()) throw ts::InputError("--noise-floor applies to --html (it draws on the page)");
  const ts::HeldTensor held_a = read(o.fixture, o.a), held_b = read(o.fixture, o.b);
  const ts::HeldTensor held_floor = o.floor.empty() ? ts::HeldTensor() : read(o.fixture, o.floor);
  const ts::TensorRef a = held_a.ref(), b = held_b.ref(), floor_t = held_floor.ref();
  // Named here, with the file and both datasets: the metrics' own message knows neither.
  if (a.shape() != b.shape())
    throw ts::InputError(o.fixture + ": A " + dataset_of(o.fixture, o.a) + " is " + a.shape_string() + ", B " +
                         dataset_of(o.fixture, o.b) + " is " + b.shape_string() +
                         ": compare needs two tensors of one shape");
  if (!o.floor.empty() && floor_t.shape() != b.shape())
    throw ts::InputError(o.fixture + ": --noise-floor " + o.floor + ": shape " + floor_t.shape_string() +
                         " differs from B's " + b.shape_string());
  // With a breakdown, its overall figures are these (the same pass, the same bits).
  const bool grouped = a.rank() == 3 && (o.breakdown || o.html.on());
  std::optional<ts::MetricBreakdown> br;
  std::string no_breakdown = "no breakdown: it needs [S, H, D] tensors, these are " + a.shape_string();
  if (o.breakdown && a.rank() != 3)
    throw ts::InputError("--breakdown needs [S, H, D] tensors, got " + a.shape_string());
  // The page's plots are the breakdown, so --html computes it whenever the
  // tensors have heads, without asking for --breakdown; a breakdown only the
  // page wanted does not fail the comparison, the page says why it is absent.
  if (grouped) {
    try {
      br = ts::compute_breakdown(a, b, ts::read_fixture_config(o.fixture));
    } catch (const ts::InputError& e) {
      if (o.breakdown) throw;
      no_breakdown = std::string("no breakdown: ") + e.what();
    }
  }
  const ts::MetricSet m = br ? br->overall : ts::compute_metrics(a, b);
  nlohmann::json j{{"fixture", o.fixture},
                   {"a", {{"name", o.a}, {"dataset", dataset_of(o.fixture, o.a)}, {"dtype", ts::dtype_name(a.dtype())}}},
                   {"b", {{"name", o.b}, {"dataset", dataset_of(o.fixture, o.b)}, {"dtype", ts::dtype_name(b.dtype())}}},
                   {"shape", a.shape_string()},
                   {"metrics", m.to_json()}};
  if (o.breakdown) {
    j["breakdown"] = br->to_json();
    j["worst"] = br->worst(static_cast<size_t>(o.top));
  }
  if (o.html.on()) {
    ts::CompareReport rep;
    rep.fixture = o.fixture;
    rep.a_name = o.a;
    rep.a_dataset = dataset_of(o.fixture, o.a);
    rep.a_dtype = ts::dtype_name(a.dtype());
    rep.b_name = o.b;
    rep.b_dataset = dataset_of(o.fixture, o.b);
    rep.b_dtype = ts::dtype_name(b.dtype());
    rep.shape = a.shape_string();
    rep.metrics = m;
    rep.breakdown = br;
    if (!br) rep.breakdown_note = no_breakdown;
    if (br && !o.floor.empty()) {
      rep.floor = ts::compute_breakdown(floor_t, b, ts::read_fixture_config(o.fixture));
      rep.floor_name = o.floor;
    }
    o.html.emit(ts::render_compare_html(rep));
  }
  o.json.emit(j.dump(2) + "\n");
  if (o.json.to_stdout() || o.html.to_stdout()) return ts::kPass;
  std::cout << o.fixture << ": " << dataset_of(o.fixture, o.a) << " (" << ts::dtype_name(a.dtype()) << ") vs "
            << dataset_of(o.fixture, o.b) << " (" << ts::dtype_name(b.dtype()) << "), " << a.shape_string() << "\n";
  const auto mm = ts::metric_map(m);
  for (const auto& name : ts::metric_names()) std::printf("  %-18s %s\n", name.c_str(), show(mm.at(name)).c_str());
  if (m.nonfinite_ref) std::printf("  note: the reference holds %lld non-finite values\n", static_cast<long long>(m.nonfinite_ref));
  if (br && o.breakdown) {
    const auto w = br->worst(static_cast<size_t>(o.top));
    auto list = [&](const char* title, const char* key, const std::vector<ts::MetricSet>& v) {
      std::printf("  worst %s by rel_l2 (of %zu):", title, v.size());
      for (const auto& e : w[key]) {
        const size_t i = e["index"].get<size_t>();
        std::printf(" %zu: %s (max_abs %.3g);", i, show(v[i].rel_l2).c_str(), v[i].max_abs);
      }
      std::printf("\n");
    };
    list("heads", "per_head", br->per_head);
    list("query blocks (128 tokens)", "per_query_block", br->per_query_block);
    list("latent frames", "per_frame", br->per_frame);
    if (br->cond) std::printf("  conditioning tokens: rel_l2 %s\n", show(br->cond->rel_l2).c_str());
  }
  return ts::kPass;
}

ts::cli::Registration reg{
    "compare",
    "Metrics between two tensors of a fixture (A candidate, B reference): dataset paths or names "
    "(exact, observed, an /outputs name); --stages compares the block's stages",
    [](CLI::App& app) -> ts::cli::Action {
      auto o = std::make_shared<Opts>();
      app.add_option("fixture", o->fixture, "fixture file")->required();
      app.add_option("a", o->a, "candidate: /path/in/fixture, exact, observed, an /outputs name or stored:NAME")
          ->required();
      app.add_option("b", o->b, "reference: as A")->required();
      ts::cli::add_json_option(app, o->json, "everything");
      app.add_flag("--breakdown", o->breakdown, "per head, per 128-token query block, per latent frame");
      ts::cli::add_report_option(app, "--html", o->html,
                                 "write a self-contained HTML page: the metrics and SVG plots of rel_l2 per head, "
                                 "query block and frame (with --stages: the verdict page)");
      app.add_option("--noise-floor", o->floor,
                     "with --html: a third tensor (the baseline, as A) against B, drawn per group as the noise floor");
      ts::cli::add_report_option(app, "--junit", o->junit, "with --stages: JUnit XML, one test case per stage x rule");
      ts::cli::add_report_option(app, "--markdown", o->markdown, "with --stages: a Markdown summary");
      app.add_option("--top", o->top, "how many of the worst groups to print")->capture_default_str()->check(ts::cli::integer_in(1, 1000000));
      app.add_flag("--stages", o->stages,
                   "compare block stage sets: A and B are observed, an /outputs name, or (B only) recompute; "
                   "every stage a rule names is judged, exit 1 unless all pass");
      app.add_option("--gate", o->gate,
                     "with --stages: a touchstone.gate/1 file or built-in naming stage bounds (default: "
                     "stages-default; block-elementwise-bit-exact for recompute)");
      app.add_option("--exact", o->exact,
                     "which stored exact output the name 'exact' means (exact or exact_cuda; auto: whichever "
                     "is stored); with --stages: an exact stage set for rules against exact")
          ->capture_default_str();
      ts::cli::set_example(app, "touchstone compare f.h5 sage2_sm121 exact --breakdown   |   touchstone compare f.h5 observed block_nvfp4-te_sage2_sm121 --stages");
      return [o] { return run(*o); };
    }};

}  // namespace cmd_compare
