// Triage on planted faults: each fault, stored as an
// output in a copy of a `ci` fixture, is ranked first by `triage` and named in
// the gate's failing line; the decomposition of sol combines to its total.
#include <cmath>

#include "catch.hpp"
#include "core/error.hpp"
#include "driver_fixtures.hpp"
#include "drivers/block_run.hpp"
#include "drivers/fixture_extract.hpp"
#include "drivers/gate_on_fixture.hpp"
#include "drivers/triage.hpp"
#include "fixtures/attention_inputs.hpp"
#include "gates/gate_file.hpp"
#include "kernels_under_test/registry.hpp"
#include "report/triage_report.hpp"

namespace {

// Float64 attention of every head where keep(h, query, key) holds.
template <typename Keep>
ts::Tensor tri_attend(const ts::Fixture& fx, Keep keep) {
  const ts::AttentionProblem p = ts::attention_problem(fx);
  const int64_t S = p.q.S, H = p.q.H, D = p.q.D;
  ts::Tensor out({S, H, D}, ts::DType::f64);
  std::vector<double> w(static_cast<size_t>(S));
  for (int64_t h = 0; h < H; ++h)
    for (int64_t s = 0; s < S; ++s) {
      double m = -HUGE_VAL;
      for (int64_t t = 0; t < S; ++t) {
        if (!keep(h, s, t)) {
          w[size_t(t)] = -HUGE_VAL;
          continue;
        }
        double d = 0;
        for (int64_t c = 0; c < D; ++c) d += p.q(s, h, c) * p.k(t, h, c);
        w[size_t(t)] = d * p.softmax_scale;
        m = std::max(m, w[size_t(t)]);
      }
      double l = 0;
      for (int64_t t = 0; t < S; ++t) l += (w[size_t(t)] = std::isinf(w[size_t(t)]) ? 0.0 : std::exp(w[size_t(t)] - m));
      for (int64_t c = 0; c < D; ++c) {
        double acc = 0;
        for (int64_t t = 0; t < S; ++t) acc += w[size_t(t)] * p.v(t, h, c);
        out.data[size_t((s * H + h) * D + c)] = acc / l;
      }
    }
  return out;
}

struct TriPlanted {
  std::string fixture;
  ts::Tensor exact;
  ts::BlockConfig config;
};

// One ci fixture per test run, with the exact output stored (so triage and the
// gate read it rather than recompute it).
const TriPlanted& tri_planted() {
  static const TriPlanted p = [] {
    TriPlanted r;
    r.fixture = ts::test::synth_fixture("triage_ci", "ci", false);
    const ts::Fixture fx = ts::load_fixture(r.fixture);
    r.config = fx.config;
    auto ex = ts::make_attention_backend("exact", {r.fixture});
    r.exact = ex->run(ts::attention_problem(fx)).out;
    ts::append_datasets(r.fixture, {{"/outputs/exact/attention", r.exact, ts::output_attrs("exact", ex->params(), std::nullopt)}});
    return r;
  }();
  return p;
}

void tri_store(const std::string& fixture, const std::string& name, const ts::Tensor& t) {
  ts::Tensor f = t;
  f.dtype = ts::DType::f32;
  ts::append_datasets(fixture, {{"/outputs/" + name + "/attention", f, ts::output_attrs(name, {{"backend", "planted"}}, std::nullopt)}});
}

nlohmann::json tri_triage(const std::string& fixture, const std::string& cand) {
  ts::TriageOptions o;
  o.candidate = cand;
  o.exact = "stored:exact";
  return ts::run_triage(fixture, o);
}

// The gate's failing line of rule `id` (sage_compat, baseline sage2).
std::string tri_gate_line(const std::string& fixture, const std::string& cand, const std::string& id) {
  ts::GateRunOptions go;
  go.exact = "stored:exact";
  const ts::GateRun run = ts::run_gate_on_fixture(ts::load_gate("sage_compat"), fixture, "sage2", {cand}, go);
  REQUIRE(run.candidates.size() == 1);
  CHECK(run.candidates[0].verdict == ts::Verdict::reject);
  for (const auto& o : run.candidates[0].outcomes)
    if (o.id == id) {
      CHECK(o.status == ts::RuleStatus::fail);
      return o.message;
    }
  FAIL("no rule " << id);
  return "";
}

const nlohmann::json& tri_first_cell(const nlohmann::json& r, const std::string& map) { return r["ranked_cells"][map]["worst"][0]; }

}  // namespace

TEST_CASE("triage: one head x 1.05 is ranked first and named with its gain by head_gain") {
  const TriPlanted& p = tri_planted();
  ts::Tensor c = p.exact;
  const int64_t H = c.dim(1), D = c.dim(2);
  for (int64_t s = 0; s < c.dim(0); ++s)
    for (int64_t d = 0; d < D; ++d) c.data[size_t((s * H + 2) * D + d)] *= 1.05;
  tri_store(p.fixture, "head_scaled", c);
  const nlohmann::json r = tri_triage(p.fixture, "stored:head_scaled");
  CHECK(tri_first_cell(r, "head_x_qblock")["row_index"] == 2);
  CHECK(tri_first_cell(r, "head_x_frame")["row_index"] == 2);
  CHECK(r["ranked_cells"]["head_x_qblock"]["worst_gain"][0]["row_index"] == 2);
  CHECK(r["worst_groups_vs_exact"]["candidate"]["gain_error_worst_head"]["index"] == 2);
  CHECK(r["worst_elements"][0]["head"] == 2);
  const std::string line = tri_gate_line(p.fixture, "stored:head_scaled", "head_gain");
  INFO(line);
  CHECK(line.find("worst head 2, gain 1.05") != std::string::npos);

  // The slice the repro names is a valid fixture that still shows the fault.
  const std::string small = ts::test::driver_scratch() + "/head_small.h5";
  ts::ExtractOptions eo;
  eo.heads = ts::parse_head_list(r["repro"]["slice"]["heads"].get<std::string>());
  const auto tr = ts::parse_token_range(r["repro"]["slice"]["tokens"].get<std::string>());
  eo.token_begin = tr.first;
  eo.token_end = tr.second;
  eo.with = {"sage2"};
  ts::extract_fixture(p.fixture, small, eo);
  const ts::Fixture sf = ts::load_fixture(small);
  CHECK(sf.config.tokens() == tr.second - tr.first);
  CHECK(sf.config.heads == int64_t(eo.heads.size()));
  size_t at = 0;
  while (eo.heads[at] != 2) ++at;
  ts::TriageOptions so;
  so.candidate = "stored:head_scaled";
  so.baseline = "stored:sage2_sm121";
  so.exact = "stored:exact";
  const nlohmann::json rs = ts::run_triage(small, so);
  CHECK(rs["worst_groups_vs_exact"]["candidate"]["gain_error_worst_head"]["index"] == at);
  ts::GateRunOptions go;
  go.exact = "stored:exact";
  const ts::GateRun run = ts::run_gate_on_fixture(ts::load_gate("sage_compat"), small, "stored:sage2_sm121",
                                                  {"stored:head_scaled"}, go);
  CHECK(run.candidates[0].verdict == ts::Verdict::reject);
}

TEST_CASE("triage: one latent frame's keys dropped is ranked first and named by frame_vs_exact") {
  const TriPlanted& p = tri_planted();
  const ts::Fixture fx = ts::load_fixture(p.fixture);
  const int64_t frame = 2;
  const ts::Tensor c = tri_attend(fx, [&](int64_t, int64_t, int64_t t) { return p.config.frame_of_token(t) != frame; });
  tri_store(p.fixture, "frame_keys_dropped", c);
  const nlohmann::json r = tri_triage(p.fixture, "stored:frame_keys_dropped");
  INFO(r["ranked_cells"].dump());
  CHECK(tri_first_cell(r, "head_x_frame")["col_index"] == frame);
  CHECK(tri_first_cell(r, "frame_x_tile")["row_index"] == frame);
  CHECK(r["worst_groups_vs_exact"]["candidate"]["rel_l2_worst_frame"]["index"] == frame);
  const std::string line = tri_gate_line(p.fixture, "stored:frame_keys_dropped", "frame_vs_exact");
  INFO(line);
  CHECK(line.find("worst frame 2,") != std::string::npos);
}

TEST_CASE("triage: one query block missing one key block is ranked first and named by qblock_vs_exact") {
  const TriPlanted& p = tri_planted();
  const ts::Fixture fx = ts::load_fixture(p.fixture);
  const int64_t qb = 3;  // tokens 384..511 ignore keys 384..447, their own key block
  const ts::Tensor c = tri_attend(fx, [&](int64_t, int64_t s, int64_t t) { return !(s / 128 == qb && t >= 384 && t < 448); });
  tri_store(p.fixture, "key_block_missing", c);
  const nlohmann::json r = tri_triage(p.fixture, "stored:key_block_missing");
  CHECK(tri_first_cell(r, "head_x_qblock")["col_index"] == qb);
  CHECK(r["worst_groups_vs_exact"]["candidate"]["rel_l2_worst_qblock"]["index"] == qb);
  CHECK(r["worst_elements"][0]["token"].get<int64_t>() / 128 == qb);
  const std::string line = tri_gate_line(p.fixture, "stored:key_block_missing", "qblock_vs_exact");
  INFO(line);
  CHECK(line.find("worst query block 3 (tokens 384..511)") != std::string::npos);
}

TEST_CASE("triage: one NaN is found with its coordinates, and every accuracy rule fails") {
  const TriPlanted& p = tri_planted();
  ts::Tensor c = p.exact;
  const int64_t H = c.dim(1), D = c.dim(2);
  c.data[size_t((300 * H + 1) * D + 17)] = NAN;
  tri_store(p.fixture, "one_nan", c);
  const nlohmann::json r = tri_triage(p.fixture, "stored:one_nan");
  const auto& nf = r["nonfinite"];
  CHECK(nf["count"] == 1);
  REQUIRE(nf["runs"].size() == 1);
  CHECK(nf["runs"][0]["head"] == 1);
  CHECK(nf["runs"][0]["tokens"] == nlohmann::json::array({300, 300}));
  CHECK(nf["positions"][0]["channel"] == 17);
  CHECK(nf["positions"][0]["t"] == p.config.frame_of_token(300));
  CHECK(tri_first_cell(r, "head_x_qblock")["row_index"] == 1);
  CHECK(tri_first_cell(r, "head_x_qblock")["col_index"] == 2);
  const std::string text = ts::render_triage_text(r);
  CHECK(text.find("token 300 head 1 ch 17") != std::string::npos);
  const std::string line = tri_gate_line(p.fixture, "stored:one_nan", "finite_guard");
  CHECK(line.find("1 non-finite") != std::string::npos);
}

TEST_CASE("triage: sol's decomposition combines to its total, and the missed mass explains the routing part") {
  const TriPlanted& p = tri_planted();
  ts::TriageOptions o;
  o.candidate = "sol:tau=1.3";
  o.exact = "stored:exact";
  const nlohmann::json r = ts::run_triage(p.fixture, o);
  const auto& ch = r["decomposition"]["chain"];
  REQUIRE(ch["parts"].size() == 3);
  CHECK(ch["identity"]["residual_rel"].get<double>() < 1e-12);
  CHECK(ch["identity"]["share_sum"].get<double>() == Approx(1.0).margin(1e-12));
  CHECK(ch["identity"]["sum_of_squares_plus_cross"].get<double>() ==
        Approx(ch["identity"]["total_squared"].get<double>()).epsilon(1e-9));
  CHECK(ch["total_rel_l2"].get<double>() == Approx(r["metrics"]["candidate_vs_exact"]["rel_l2"].get<double>()).epsilon(1e-9));
  // Dense sol at bf16 is one output rounding from exact; routing dominates.
  CHECK(ch["parts"][0]["rel_l2"].get<double>() < 0.005);
  CHECK(ch["parts"][1]["rel_l2"].get<double>() > 0.3);
  CHECK(r["decomposition"]["routing"]["correlation_missed_mass_vs_routing_error"].get<double>() > 0.7);
}

TEST_CASE("triage: sage2's quantisers, one off at a time, add up with the floor and interaction") {
  const std::string f = ts::test::synth_fixture("triage_tiny", "tiny", false);
  ts::TriageOptions o;
  o.candidate = "sage2";
  const nlohmann::json r = ts::run_triage(f, o);
  const auto& d = r["decomposition"]["one_off"];
  REQUIRE(d["parts"].size() == 5);
  double share = d["floor"]["share"].get<double>() + d["interaction"]["share"].get<double>();
  for (const auto& x : d["parts"]) share += x["share"].get<double>();
  CHECK(share == Approx(1.0).margin(1e-9));
}

TEST_CASE("triage: --against says where two versions differ and which is closer to exact") {
  const TriPlanted& p = tri_planted();
  ts::Tensor a = p.exact, b = p.exact;
  const int64_t H = a.dim(1), D = a.dim(2);
  for (int64_t d = 0; d < D; ++d) b.data[size_t((600 * H + 3) * D + d)] += 0.5;  // v2 broke token 600 of head 3
  tri_store(p.fixture, "v1", a);
  tri_store(p.fixture, "v2", b);
  ts::TriageOptions o;
  o.candidate = "stored:v2";
  o.against = "stored:v1";
  o.exact = "stored:exact";
  const nlohmann::json r = ts::run_triage(p.fixture, o);
  const auto& ag = r["against"];
  CHECK(ag["differing_elements"].get<int64_t>() > 0);
  CHECK(ag["worst_differences"][0]["token"] == 600);
  CHECK(ag["worst_differences"][0]["head"] == 3);
  CHECK(ag["ranked_differences"]["head_x_qblock"]["worst"][0]["row_index"] == 3);
  CHECK(ag["closer_to_exact"]["head_x_qblock"]["against_closer"].get<int>() >= 1);
}

TEST_CASE("triage: in a block fixture, one perturbed stage is the first out of bounds") {
  const std::string f = ts::test::synth_fixture("triage_block", "tiny", true);
  const ts::Fixture fx = ts::load_fixture(f, {false, true});
  std::vector<ts::DatasetWrite> w;
  for (const auto& [path, t] : fx.block) {
    if (path.rfind("stages/", 0) != 0) continue;
    ts::Tensor x = t;
    if (path == "stages/fc1")
      for (double& v : x.data) v *= 1.05;
    w.push_back({"/outputs/bad/" + path, x, ts::output_attrs("bad", {{"backend", "planted"}}, std::nullopt)});
  }
  auto ex = ts::make_attention_backend("exact", {f});
  w.push_back({"/outputs/bad/attention", ex->run(ts::attention_problem(fx)).out, ts::output_attrs("bad", {}, std::nullopt)});
  ts::append_datasets(f, w);
  ts::TriageOptions o;
  o.candidate = "stored:bad";
  const nlohmann::json r = ts::run_triage(f, o);
  INFO(r["block"].dump());
  CHECK(r["block"]["first_failing"] == "fc1");
  CHECK(r["block"]["stage_maps"]["stage"] == "fc1");
  CHECK(ts::render_triage_text(r).find("first stage out of bounds: fc1") != std::string::npos);
}

TEST_CASE("triage and extract: bad input is an InputError before any work") {
  const TriPlanted& p = tri_planted();
  ts::TriageOptions o;
  o.candidate = "stored:no_such_output";
  CHECK_THROWS_AS(ts::run_triage(p.fixture, o), ts::InputError);
  o.candidate = "sol:tau=1.3,bogus=1";
  CHECK_THROWS_AS(ts::run_triage(p.fixture, o), ts::InputError);
  ts::ExtractOptions eo;
  eo.token_begin = 100;  // cuts latent frame 0 (192 tokens a frame)
  eo.token_end = 300;
  CHECK_THROWS_AS(ts::extract_fixture(p.fixture, ts::test::driver_scratch() + "/bad.h5", eo), ts::InputError);
  CHECK_THROWS_AS(ts::parse_head_list("1,x"), ts::InputError);
  CHECK_THROWS_AS(ts::parse_token_range("5:5"), ts::InputError);
  eo.token_begin = 0;
  eo.token_end = -1;
  eo.heads = {9};
  CHECK_THROWS_AS(ts::extract_fixture(p.fixture, ts::test::driver_scratch() + "/bad.h5", eo), ts::InputError);
}
