// Kind "plugin" (kernels_under_test/plugin_backend.hpp): the example host
// plugin against the exact reference in-process, and every way a plugin can
// fail (tests/kernels_under_test/plugins/bad_plugin.c) giving its own reason
// instead of an exception at construction or a dead process.
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "catch.hpp"
#include "core/error.hpp"
#include "fixtures/synth.hpp"
#include "kernels_under_test/registry.hpp"
#include "reference/attention_exact.hpp"

namespace {

const std::string kDir = TOUCHSTONE_PLUGIN_DIR;
std::string lib(const std::string& name) { return kDir + "/lib" + name + ".so"; }

double rel_l2(const ts::Tensor& a, const ts::Tensor& b) {
  double num = 0, den = 0;
  for (size_t i = 0; i < a.data.size(); ++i) {
    num += (a.data[i] - b.data[i]) * (a.data[i] - b.data[i]);
    den += b.data[i] * b.data[i];
  }
  return std::sqrt(num / den);
}

struct Tiny {
  ts::SynthResult syn;
  ts::AttentionProblem p;
  Tiny() {
    ts::SynthOptions so;
    so.preset = "tiny";
    so.seed = 4;
    syn = ts::synthesize(so);
    p = ts::make_attention_problem(syn.dataset("/attention/q"), syn.dataset("/attention/k"),
                                   syn.dataset("/attention/v"), syn.config);
  }
};

// The reason a backend gives when it runs (they all fail at run(), never at construction).
std::string failure(const std::string& spec, const ts::BackendContext& ctx = {}) {
  const Tiny t;
  auto b = ts::make_attention_backend(spec, ctx);
  try {
    b->run(t.p);
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(ran)";
}

// A tiny fixture on disk, for the probe (made once through the CLI).
const std::string& fixture() {
  static const std::string f = [] {
    const std::string path = std::filesystem::temp_directory_path().string() + "/ts_plugin_test_" +
                             std::to_string(::getpid()) + ".h5";
    const std::string cmd = std::string(TOUCHSTONE_CLI) + " fixture synth --preset tiny --seed 4 -o " + path +
                            " >/dev/null 2>&1";
    REQUIRE(std::system(cmd.c_str()) == 0);
    return path;
  }();
  return f;
}

ts::BackendContext probed(double timeout_s = 60) {
  ts::BackendContext c;
  c.fixture_path = fixture();
  c.probe_exe = TOUCHSTONE_CLI;
  c.probe_timeout_s = timeout_s;
  return c;
}

}  // namespace

TEST_CASE("plugin: the example host kernel equals the exact reference") {
  const Tiny t;
  const ts::Tensor exact = ts::attention_exact(t.p).out;
  struct Case {
    std::string params, name;
    double bound;
  };
  for (const Case& c : {Case{"", "host_attention_fp32", 1e-5}, Case{",accumulate=fp64", "host_attention_fp64", 1e-7},
                        Case{",output=bf16", "host_attention_fp32_bf16", 8e-3}}) {
    auto b = ts::make_attention_backend("plugin:" + lib("tsk_host_attention") + c.params, {});
    CHECK(b->name() == c.name);
    CHECK(b->device() == "cpu");
    CHECK(b->params()["backend"] == "plugin");
    const ts::AttentionResult r = b->run(t.p);
    REQUIRE(r.out.shape == exact.shape);
    const double err = rel_l2(r.out, exact);
    INFO(c.name << " rel_l2 vs exact " << err);
    CHECK(std::isfinite(err));
    CHECK(err < c.bound);
    CHECK(r.stats["clock"] == "host_steady");
    CHECK(r.stats["host_ms"].get<double>() > 0);
    CHECK(r.out.dtype == (c.params == ",output=bf16" ? ts::DType::bf16 : ts::DType::f32));
  }
}

TEST_CASE("plugin: a malformed spec is bad input") {
  // A path that names no file (a typo) is bad input naming the path, not a
  // rejected kernel; so is a folder.
  CHECK_THROWS_WITH(ts::make_attention_backend("plugin:/nonexistent/libnothing.so", {}),
                    Catch::Contains("no plugin file /nonexistent/libnothing.so"));
  CHECK_THROWS_WITH(ts::make_attention_backend("plugin:/tmp", {}), Catch::Contains("/tmp is a folder"));
  CHECK_THROWS_AS(ts::make_attention_backend("plugin", {}), ts::InputError);
  CHECK_THROWS_AS(ts::make_attention_backend("plugin:", {}), ts::InputError);
  CHECK_THROWS_AS(ts::make_attention_backend("plugin:x.so,block", {}), ts::InputError);
  CHECK_THROWS_AS(ts::make_attention_backend("plugin:x.so,a=1,a=2", {}), ts::InputError);
}

TEST_CASE("plugin: a plugin that fails to load fails as a candidate, with its reason") {
  // A file that is not a shared library loads no better than a bad one.
  const std::string not_a_library = std::string(TOUCHSTONE_SOURCE_DIR) + "/README.md";
  CHECK_THAT(failure("plugin:" + not_a_library), Catch::Contains("cannot load plugin " + not_a_library));
  CHECK_THAT(failure("plugin:" + lib("tsk_bad_missing_symbol")), Catch::Contains("has no symbol tsk_run"));
  CHECK_THAT(failure("plugin:" + lib("tsk_bad_wrong_version")),
             Catch::Contains("built for ABI version 999; this touchstone loads version 1"));
  CHECK_THAT(failure("plugin:" + lib("tsk_bad_init")),
             Catch::Contains("tsk_init failed (TSK_INVALID_ARGUMENT): refuses every configuration"));
  CHECK_THAT(failure("plugin:" + lib("tsk_host_attention") + ",acumulate=fp64"),
             Catch::Contains("unknown key 'acumulate'"));
  CHECK_THAT(failure("plugin:" + lib("tsk_bad_nan")),
             Catch::Contains("returned 4608 non-finite value(s) of 4608 from finite inputs (first at token 0, head 0"));
}

TEST_CASE("plugin: the probe turns a crash, an abort or a hang into that candidate's reason") {
  CHECK_THAT(failure("plugin:" + lib("tsk_bad_crash"), probed()),
             Catch::Contains("crashed: signal 11 (Segmentation fault) in plugin plugin:" + lib("tsk_bad_crash")));
  CHECK_THAT(failure("plugin:" + lib("tsk_bad_abort"), probed()), Catch::Contains("crashed: signal 6 (Aborted)"));
  CHECK_THAT(failure("plugin:" + lib("tsk_bad_hang"), probed(2)), Catch::Contains("timed out"));
  // The child's own reasons come back word for word.
  CHECK_THAT(failure("plugin:" + lib("tsk_bad_nan"), probed()), Catch::Contains("non-finite value(s)"));
  CHECK_THAT(failure("plugin:" + lib("tsk_bad_wrong_version"), probed()), Catch::Contains("ABI version 999"));
  // A good plugin passes the probe and then runs here.
  auto b = ts::make_attention_backend("plugin:" + lib("tsk_host_attention"), probed());
  const Tiny t;
  CHECK(b->run(t.p).out.shape == std::vector<int64_t>{t.p.q.S, t.p.q.H, t.p.q.D});
  // A probe executable that cannot start is a reason too, not a pass.
  ts::BackendContext nowhere = probed();
  nowhere.probe_exe = "/nonexistent/touchstone";
  CHECK_THAT(failure("plugin:" + lib("tsk_host_attention"), nowhere), Catch::Contains("plugin probe"));
  std::filesystem::remove(fixture());
}
