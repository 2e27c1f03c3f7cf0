// touchstone bench reference: exact-attention throughput against the machine's
// own float64 GEMM rate through Eigen, measured side by side in one run.
#include <sys/resource.h>

#include <Eigen/Dense>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>
#include <omp.h>

#include "core/error.hpp"
#include "fixtures/synth.hpp"
#include "reference/attention_exact.hpp"
#include "tools/command.hpp"

namespace cmd_bench_reference {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Peak resident memory of this process so far, in bytes.
double peak_rss_bytes() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) * 1024.0;
}

// Float64 GEMM rate through Eigen with every OpenMP thread multiplying its own
// matrices, as the attention reference uses the threads (one task per thread).
double eigen_dgemm_gflops(int n, int reps) {
  using Mat = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  const int threads = omp_get_max_threads();
  std::vector<Mat> A(threads), B(threads), C(threads);
  for (int t = 0; t < threads; ++t) {
    A[t] = Mat::Random(n, n);
    B[t] = Mat::Random(n, n);
    C[t] = Mat::Zero(n, n);
  }
#pragma omp parallel for schedule(static, 1)
  for (int t = 0; t < threads; ++t) C[t].noalias() = A[t] * B[t];  // warm-up
  const auto t0 = Clock::now();
#pragma omp parallel for schedule(static, 1)
  for (int t = 0; t < threads; ++t)
    for (int r = 0; r < reps; ++r) C[t].noalias() += A[t] * B[t];
  const double s = seconds_since(t0);
  return 2.0 * n * double(n) * n * reps * threads / s / 1e9;
}

struct Opts {
  std::string preset = "ci", precision = "fp64";
  int reps = 3;
  uint64_t seed = 1;
  ts::cli::ReportTarget json;
};

int run(const Opts& o) {
  ts::preset_config(o.preset);  // an unknown name is bad input, listing the presets
  if (o.reps < 1) throw ts::InputError("--reps must be >= 1");
  ts::SynthOptions so;
  so.preset = o.preset;
  so.seed = o.seed;
  const ts::SynthResult syn = ts::synthesize(so);
  const double rss_inputs = peak_rss_bytes();
  const ts::AttentionProblem p =
      ts::make_attention_problem(syn.dataset("/attention/q"), syn.dataset("/attention/k"),
                                 syn.dataset("/attention/v"), syn.config);
  ts::ExactOptions eo;
  eo.precision = o.precision == "fp32" ? ts::ExactPrecision::fp32 : ts::ExactPrecision::fp64;
  if (o.precision != "fp32" && o.precision != "fp64")
    throw ts::InputError("--precision: expected fp64 or fp32, got '" + o.precision + "'");

  const double S = double(p.q.S), H = double(p.q.H), D = double(p.q.D);
  const double flop = 4.0 * S * S * D * H;
  // One timed run where one run is already seconds of work (medium, block24).
  const int reps = flop > 1e11 ? 1 : o.reps;
  std::vector<double> secs;
  ts::attention_exact(p, eo);  // warm-up (and the peak memory of one run)
  for (int r = 0; r < reps; ++r) {
    const auto t0 = Clock::now();
    ts::attention_exact(p, eo);
    secs.push_back(seconds_since(t0));
  }
  std::sort(secs.begin(), secs.end());
  const double median = secs[secs.size() / 2];
  const double attn = flop / median / 1e9;
  const double gemm = eigen_dgemm_gflops(512, 4);
  const double peak = peak_rss_bytes();
  if (o.json.on()) {
    nlohmann::json j = {{"preset", o.preset},
                        {"precision", o.precision},
                        {"threads", omp_get_max_threads()},
                        {"S", p.q.S},
                        {"H", p.q.H},
                        {"D", p.q.D},
                        {"flop", flop},
                        {"seconds_median", median},
                        {"seconds", secs},
                        {"attention_gflops", attn},
                        {"eigen_dgemm_gflops", gemm},
                        {"ratio", attn / gemm},
                        {"peak_rss_bytes", peak},
                        {"peak_rss_after_inputs_bytes", rss_inputs}};
    o.json.emit(j.dump(2) + "\n");
  }
  if (!o.json.to_stdout()) {
    std::printf("exact attention (%s), preset %s: S=%lld H=%lld D=%lld, %d thread(s)\n",
                o.precision.c_str(), o.preset.c_str(), (long long)p.q.S, (long long)p.q.H,
                (long long)p.q.D, omp_get_max_threads());
    std::printf("  %-28s %10.3f s (median of %zu)\n", "time", median, secs.size());
    std::printf("  %-28s %10.2f GFLOP/s (4*S^2*D*H = %.3g FLOP)\n", "attention", attn, flop);
    std::printf("  %-28s %10.2f GFLOP/s\n", "Eigen DGEMM (same threads)", gemm);
    std::printf("  %-28s %10.2f\n", "ratio attention/DGEMM", attn / gemm);
    std::printf("  %-28s %10.1f MiB (inputs alone %.1f MiB)\n", "peak memory", peak / 1048576.0,
                rss_inputs / 1048576.0);
  }
  return ts::kPass;
}

ts::cli::Registration reg{
    "bench reference",
    "Exact-attention throughput (GFLOP/s) beside this machine's Eigen DGEMM rate, and their ratio",
    [](CLI::App& app) -> ts::cli::Action {
      auto o = std::make_shared<Opts>();
      app.add_option("--preset", o->preset, "tiny | ci | medium | block24")->capture_default_str();
      app.add_option("--precision", o->precision, "fp64 | fp32")->capture_default_str();
      app.add_option("--reps", o->reps, "timed repetitions (medium and block24: 1)")
          ->capture_default_str()
          ->check(ts::cli::integer_in(1, 1000000));
      ts::cli::add_seed_option(app, o->seed, "synthesis seed");
      ts::cli::add_json_option(app, o->json, "the result");
      ts::cli::set_example(app, "touchstone bench reference --preset medium");
      return [o] { return run(*o); };
    }};

}  // namespace cmd_bench_reference
