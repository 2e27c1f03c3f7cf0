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
#include "gates/report.hpp"
#include "tools/command.hpp"
#include "tools/compare_stages.hpp"

namespace {

struct Opts {
  std::string fixture, a, b, gate, html;
  bool json = false, breakdown = false, stages = false;
  int top = 5;
};

// "exact" -> /outputs/exact/attention, "observed" -> /attention/observed,
// another bare name -> /outputs/NAME/attention, a path starting with / as is.
std::string dataset_of(const std::string& name) {
  if (!name.empty() && name[0] == '/') return name;
  if (name == "observed") return "/attention/observed";
  return "/outputs/" + name + "/attention";
}

ts::Tensor read(const std::string& fixture, const std::string& name) {
  const std::string ds = dataset_of(name);
  if (!ts::has_dataset(fixture, ds)) {
    std::string outs;
    for (const auto& n : ts::list_group(fixture, "/outputs")) outs += (outs.empty() ? "" : ", ") + n;
    throw ts::InputError(fixture + ": no dataset " + ds + " (for '" + name + "'; outputs: " +
                         (outs.empty() ? "none" : outs) + ")");
  }
  return ts::read_tensor(fixture, ds);
}

std::string show(const std::optional<double>& v) {
  if (!v) return "undefined";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", *v);
  return buf;
}

int run(const Opts& o) {
  if (o.stages) {
    if (!o.html.empty()) throw ts::InputError("--html applies to a comparison of two tensors, not --stages");
    return ts::compare_stages(o.fixture, o.a, o.b, o.gate, o.json);
  }
  if (!o.gate.empty()) throw ts::InputError("--gate applies to --stages only");
  const ts::Tensor a = read(o.fixture, o.a), b = read(o.fixture, o.b);
  const ts::MetricSet m = ts::compute_metrics(a, b);
  nlohmann::json j{{"fixture", o.fixture},
                   {"a", {{"name", o.a}, {"dataset", dataset_of(o.a)}, {"dtype", ts::dtype_name(a.dtype)}}},
                   {"b", {{"name", o.b}, {"dataset", dataset_of(o.b)}, {"dtype", ts::dtype_name(b.dtype)}}},
                   {"shape", a.shape_string()},
                   {"metrics", m.to_json()}};
  std::optional<ts::MetricBreakdown> br;
  if (o.breakdown && a.rank() != 3)
    throw ts::InputError("--breakdown needs [S, H, D] tensors, got " + a.shape_string());
  // The page's plots are the breakdown, so --html computes it whenever the
  // tensors have heads, without asking for --breakdown; a breakdown only the
  // page wanted does not fail the comparison, the page says why it is absent.
  std::string no_breakdown = "no breakdown: it needs [S, H, D] tensors, these are " + a.shape_string();
  if (a.rank() == 3 && (o.breakdown || !o.html.empty())) {
    try {
      const ts::Fixture fx = ts::load_fixture(o.fixture, {true, false});
      br = ts::compute_breakdown(a, b, fx.config);
    } catch (const ts::InputError& e) {
      if (o.breakdown) throw;
      no_breakdown = std::string("no breakdown: ") + e.what();
    }
  }
  if (o.breakdown) {
    j["breakdown"] = br->to_json();
    j["worst"] = br->worst(static_cast<size_t>(o.top));
  }
  if (!o.html.empty()) {
    ts::CompareReport rep;
    rep.fixture = o.fixture;
    rep.a_name = o.a;
    rep.a_dataset = dataset_of(o.a);
    rep.a_dtype = ts::dtype_name(a.dtype);
    rep.b_name = o.b;
    rep.b_dataset = dataset_of(o.b);
    rep.b_dtype = ts::dtype_name(b.dtype);
    rep.shape = a.shape_string();
    rep.metrics = m;
    rep.breakdown = br;
    if (!br) rep.breakdown_note = no_breakdown;
    ts::write_file_atomic(o.html, ts::render_compare_html(rep));
  }
  if (o.json) {
    std::cout << j.dump(2) << "\n";
    return ts::kPass;
  }
  std::cout << o.fixture << ": " << dataset_of(o.a) << " (" << ts::dtype_name(a.dtype) << ") vs "
            << dataset_of(o.b) << " (" << ts::dtype_name(b.dtype) << "), " << a.shape_string() << "\n";
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
      app.add_option("a", o->a, "candidate: /path/in/fixture, exact, observed or an /outputs name")->required();
      app.add_option("b", o->b, "reference: as A")->required();
      app.add_flag("--json", o->json, "print everything as JSON");
      app.add_flag("--breakdown", o->breakdown, "per head, per 128-token query block, per latent frame");
      app.add_option("--html", o->html,
                     "write a self-contained HTML page: the metrics and SVG plots of rel_l2 per head, "
                     "query block and frame");
      app.add_option("--top", o->top, "how many of the worst groups to print")->capture_default_str();
      app.add_flag("--stages", o->stages, "compare block stage sets (see compare_stages.hpp)");
      app.add_option("--gate", o->gate, "with --stages: a touchstone.gate/1 file naming stage bounds");
      return [o] { return run(*o); };
    }};

}  // namespace
