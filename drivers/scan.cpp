// touchstone scan's evaluation: one synthetic fixture per shape, the candidate and the exact
// reference on it, the candidate's figure against exact; and its reports.
#include "drivers/scan.hpp"

#include <cstring>

#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>
#include <sstream>

#include "core/error.hpp"
#include "core/progress.hpp"
#include "drivers/run_estimate.hpp"
#include "drivers/scan_worker.hpp"
#include "fixtures/synth.hpp"
#include "gates/gate_file.hpp"
#include "gates/metrics.hpp"
#include "kernels_under_test/registry.hpp"

namespace ts {

namespace fs = std::filesystem;

BlockConfig scan_config(const std::string& preset, int64_t S, int64_t H, int64_t D) {
  BlockConfig c = preset_config(preset);
  if (S < 2 || H < 1 || D < 2 || D % 2) throw InputError("scan: a shape needs S >= 2, H >= 1 and an even D >= 2");
  const int64_t base_s = c.tokens(), base_v = c.video_tokens();
  // Conditioning tokens in the preset's share, at least one where it has any.
  int64_t cond = base_s > base_v ? std::max<int64_t>(1, (int64_t)std::llround(static_cast<double>(S) * (base_s - base_v) / base_s)) : 0;
  if (cond >= S) cond = 0;
  const int64_t V = S - cond;
  const int64_t t = std::clamp<int64_t>(c.grid_t, 1, V);
  const int64_t per = V / t;
  // The frame's aspect kept: h and w scaled alike.
  const double f = std::sqrt(static_cast<double>(per) / static_cast<double>(c.grid_h * c.grid_w));
  const int64_t h = std::clamp<int64_t>(std::llround(static_cast<double>(c.grid_h) * f), 1, per);
  const int64_t w = std::max<int64_t>(1, per / h);
  std::vector<Segment> conds;
  for (const auto& s : c.segments)
    if (!s.video) conds.push_back(s);
  c.grid_t = t;
  c.grid_h = h;
  c.grid_w = w;
  const int64_t video = t * h * w;
  int64_t left = S - video, at = video;
  c.segments = {{"video", true, 0, video}};
  const int64_t base_cond = base_s - base_v;
  for (size_t i = 0; i < conds.size() && left > 0; ++i) {
    int64_t n = i + 1 == conds.size() ? left
                                      : std::min<int64_t>(left, std::llround(static_cast<double>(S - video) * conds[i].length /
                                                                    std::max<int64_t>(base_cond, 1)));
    if (n <= 0) continue;
    c.segments.push_back({conds[i].name, false, at, n});
    at += n;
    left -= n;
  }
  if (left > 0) c.segments.push_back({"text", false, at, left});
  c.heads = H;
  c.head_dim = D;
  c.hidden = H * D;
  c.rope_rot_dims = std::min(c.rope_rot_dims, D / 6 * 6);
  c.rope_freqs_per_axis = c.rope_rot_dims / 6;
  c.softmax_scale = 1.0 / std::sqrt(static_cast<double>(D));
  c.validate("scan shape S=" + std::to_string(S) + " H=" + std::to_string(H) + " D=" + std::to_string(D));
  return c;
}

namespace {

// Larger is worse, so that the search reads every metric one way.
std::optional<double> badness(const MetricSet& m, const std::string& metric) {
  if (m.nonfinite) return std::numeric_limits<double>::quiet_NaN();
  if (metric == "cosine") {
    if (!m.cosine) return std::nullopt;
    return 1 - *m.cosine;
  }
  return m.get(metric);
}

const std::vector<std::string>& scan_metrics() {
  static const std::vector<std::string> m = {"rel_l2", "rel_l1", "rmse", "max_abs", "cosine"};
  return m;
}


std::string temp_dir(const std::string& under) {
  std::string tmpl = ((under.empty() ? fs::temp_directory_path() : fs::path(under)) / "touchstone-scan-XXXXXX").string();
  if (!mkdtemp(tmpl.data())) throw InputError("scan: cannot create a folder for the worker's fixtures under " +
                                              (under.empty() ? fs::temp_directory_path().string() : under));
  return tmpl;
}

}  // namespace

std::string scan_figure_name(const std::string& metric) { return metric == "cosine" ? "1 - cosine" : metric; }

ScanResult run_scan(const ScanOptions& o) {
  if (o.candidate.empty() == o.worker.empty()) throw InputError("scan: give exactly one of --candidate and --worker");
  if (std::find(scan_metrics().begin(), scan_metrics().end(), o.metric) == scan_metrics().end())
    throw InputError("scan: --metric " + o.metric + ": expected rel_l2, rel_l1, rmse, max_abs or cosine");
  const BlockConfig base = preset_config(o.preset);
  const int64_t S0 = o.seq.value_or(base.tokens()), H0 = o.heads.value_or(base.heads),
                D0 = o.head_dim.value_or(base.head_dim);
  auto shape = [&](int64_t x) {
    return std::array<int64_t, 3>{o.dim == ScanDim::seq ? x : S0, o.dim == ScanDim::heads ? x : H0,
                                  o.dim == ScanDim::head_dim ? x : D0};
  };
  // Both ends' geometry and every backend spec are checked before the first run.
  for (int64_t x : {o.search.from, o.search.to}) {
    const auto s = shape(x);
    scan_config(o.preset, s[0], s[1], s[2]);
  }
  {
    // Dense CPU backends at the largest shape: half the budget's runs there is what a cliff
    // near the top costs (the grid and the bisection's upper half).
    const auto s = shape(o.search.to);
    const int n = std::max(2, o.search.budget / 2);
    std::vector<std::pair<std::string, int>> runs = {{o.exact, n}};
    if (!o.candidate.empty()) runs.push_back({o.candidate, n});
    refuse_slow_cpu(runs, scan_config(o.preset, s[0], s[1], s[2]), SlowGuard::from_env(o.allow_slow), "scan");
  }
  ScanResult res;
  res.options = o;
  auto exact = make_attention_backend(o.exact, BackendContext{});
  std::unique_ptr<AttentionBackend> candidate;
  std::unique_ptr<ScanWorker> worker;
  std::string dir;
  if (!o.candidate.empty()) {
    // In process: a plugin is not probed in a child per shape (its crash ends the scan).
    candidate = make_attention_backend(o.candidate, BackendContext{});
    res.candidate_name = candidate->name();
  } else {
    dir = temp_dir(o.work_dir);
    worker = std::make_unique<ScanWorker>(o.worker);
    res.candidate_name = "worker: " + o.worker;
  }
  struct Cleanup {
    std::string dir;
    ~Cleanup() {
      std::error_code ec;
      if (!dir.empty()) fs::remove_all(dir, ec);
    }
  } cleanup{dir};

  const bool progress = o.progress || Progress::enabled();
  auto evaluate = [&](int64_t x) {
    ScanEvaluation e;
    const auto s = shape(x);
    try {
      SynthOptions so;
      so.preset = o.preset;
      so.seed = o.seed;
      so.structure = o.structure;
      so.config = scan_config(o.preset, s[0], s[1], s[2]);
      const SynthResult fx = synthesize(so);
      const AttentionProblem p = make_attention_problem(fx.dataset("/attention/q"), fx.dataset("/attention/k"),
                                                        fx.dataset("/attention/v"), fx.config);
      const AttentionResult ex = exact->run(p);
      const auto t0 = std::chrono::steady_clock::now();
      Tensor out;
      if (candidate) {
        out = candidate->run(p).out;
      } else {
        const std::string path = dir + "/S" + std::to_string(s[0]) + "_H" + std::to_string(s[1]) + "_D" +
                                 std::to_string(s[2]) + ".h5";
        write_synthetic(fx, path, WriteOptions{});
        const std::string err = worker->run(path);
        if (!err.empty()) throw InputError(err);
        out = make_attention_backend(std::string("stored:") + kScanWorkerOutput, BackendContext{path})->run(p).out;
        std::error_code ec;
        fs::remove(path, ec);
      }
      e.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      e.figure = badness(compute_metrics(out, ex.out), o.metric);
    } catch (const std::exception& ex) {
      e.error = ex.what();
    }
    if (progress)
      std::cerr << "scan: " << scan_dim_name(o.dim) << "=" << x << ": "
                << (e.error.empty() ? (e.figure ? format_number(*e.figure) : "undefined") : "failed: " + e.error)
                << std::endl;
    return e;
  };
  res.search = scan_search(o.search, evaluate);
  return res;
}

int ScanResult::exit_code() const {
  if (search.cliff) return 1;
  for (const auto& e : search.evaluations)
    if (!e.figure || !std::isfinite(*e.figure)) return 1;
  return 0;
}

}  // namespace ts
