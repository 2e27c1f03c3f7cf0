// Every device backend against its host reference, as one table walked by one
// loop (llama.cpp's test-backend-ops style): each row names the device spec,
// the host spec it mirrors, what it promises and on which presets it runs.
// Without a device it says "skipped: no CUDA device", which ctest reports as a
// skipped test. Each row prints one line of figures (the note's table).
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <limits>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "catch.hpp"
#include "core/error.hpp"
#include "fixtures/synth.hpp"
#include "fixtures/block/synth_block.hpp"
#include "kernels_under_test/registry.hpp"
#include "reference/block.hpp"
#include "reference/cuda/block.hpp"
#include "reference/cuda/exact_kernel.hpp"
#include "reference/block_linear.hpp"
#include "reference/numerics/convert.hpp"

namespace {

enum class Promise {
  bits,      // the host's output bits
  // Summation order only: each bf16 output within one bf16 step of the host's, or (outputs
  // near zero, whose float32 sums cancel, so the order can flip their sign: seen at medium)
  // within 2^-16 of the largest output magnitude; fewer than 1 % differ.
  bf16_ulp,
  rel_l2,    // relative L2 to the host output below `bound`
};

struct DeviceCase {
  const char* device;
  const char* host;
  Promise promise;
  double bound;     // rel_l2 to the host: the bound (rel_l2), or a sanity ceiling (the others)
  bool medium;      // also at the medium preset (the host side is affordable there)
  bool routing;     // sol: compare the dumped routing (route_mask) too
  // Block rows: block_cuda against block with this linear mode (and NVFP4
  // recipe), device and host being their attention specs; the promise holds
  // for every stage. nullptr: an attention row.
  const char* linear = nullptr;
  const char* recipe = "te";
};

// exact: float64 everywhere; flash (the default on sm_90+) streams the softmax, gemm
// materialises it (any device; chunk > 0 picks it): both sum in another order than the host.
// sage2: the device mirrors the host's steps, bit for bit, with either kernel (tc, simt).
// sol: the host routes from r, which the device prepares with the host's bits; int8_qk_pv sums
// only integer codes in float, so any order is exact; bf16 and int8_qk sum their float32 products
// in index order on both sides (reference/attention_sol.cpp product_in_order).
const DeviceCase kCases[] = {
    {"exact_cuda", "exact", Promise::rel_l2, 1e-13, true, false},
    {"exact_cuda:kernel=gemm", "exact", Promise::rel_l2, 1e-13, false, false},
    {"exact_cuda:chunk=7", "exact", Promise::rel_l2, 1e-13, false, false},
    {"exact_cuda:chunk=100", "exact", Promise::rel_l2, 1e-13, false, false},
    {"sage2_cuda:preset=sm121", "sage2:preset=sm121", Promise::bits, 0, true, false},
    {"sage2_cuda:preset=sm120", "sage2:preset=sm120", Promise::bits, 0, false, false},
    {"sage2_cuda:preset=sm89", "sage2:preset=sm89", Promise::bits, 0, false, false},
    {"sage2_cuda:preset=sm90", "sage2:preset=sm90", Promise::bits, 0, false, false},
    {"sage2_cuda:preset=sm121,accum=fp32", "sage2:preset=sm121,accum=fp32", Promise::bits, 0, false, false},
    {"sage2_cuda:preset=sm90,accum=fp32+fp16", "sage2:preset=sm90,accum=fp32+fp16", Promise::bits, 0, false, false},
    {"sage2_cuda:preset=sm121,key_block=128,round_out=off", "sage2:preset=sm121,key_block=128,round_out=off",
     Promise::bits, 0, false, false},
    {"sage2_cuda:preset=sm89,smooth_k=off,blkq=64,warpq=16", "sage2:preset=sm89,smooth_k=off,blkq=64,warpq=16",
     Promise::bits, 0, false, false},
    // The rows above run kernel=auto (tc on compute capability 9.0+); the simt kernel on the presets too.
    {"sage2_cuda:preset=sm121,kernel=simt", "sage2:preset=sm121", Promise::bits, 0, false, false},
    {"sage2_cuda:preset=sm90,kernel=simt", "sage2:preset=sm90", Promise::bits, 0, false, false},
    {"sol_cuda:precision=int8_qk_pv,dump=on", "sol:precision=int8_qk_pv,dump=on", Promise::bits, 0, true, true},
    {"sol_cuda:precision=int8_qk_pv,round_out=off", "sol:precision=int8_qk_pv,round_out=off", Promise::bits, 0,
     false, false},
    {"sol_cuda:precision=int8_qk_pv,tau=-100,block_k=16", "sol:precision=int8_qk_pv,tau=-100,block_k=16",
     Promise::bits, 0, false, false},
    {"sol_cuda:precision=int8_qk_pv,selector=topk,compensation=off,block_q=64",
     "sol:precision=int8_qk_pv,selector=topk,compensation=off,block_q=64", Promise::bits, 0, false, false},
    {"sol_cuda:precision=int8_qk,dump=on", "sol:precision=int8_qk,dump=on", Promise::bits, 0, true, true},
    {"sol_cuda:precision=int8_qk,selector=cdf,block_k=32", "sol:precision=int8_qk,selector=cdf,block_k=32",
     Promise::bits, 0, false, false},
    {"sol_cuda:precision=bf16,dump=on", "sol:precision=bf16,dump=on", Promise::bits, 0, false, true},
    {"sol_cuda:precision=bf16,tau=0.5,block_k=16", "sol:precision=bf16,tau=0.5,block_k=16", Promise::bits, 0,
     false, false},
    {"sol_cuda:precision=bf16,round_out=off", "sol:precision=bf16,round_out=off", Promise::bits, 0, false,
     false},
    // The block: NVFP4 (every recipe) and bf16 linears with sage2_cuda give the host's bits stage
    // by stage; fp64 (cuBLAS DGEMM linears, exact_cuda) within rounding.
    {"sage2_cuda:preset=sm121", "sage2:preset=sm121", Promise::bits, 0, true, false, "nvfp4", "te"},
    {"sage2_cuda:preset=sm121", "sage2:preset=sm121", Promise::bits, 0, false, false, "nvfp4", "te_rcp6"},
    {"sage2_cuda:preset=sm90", "sage2:preset=sm90", Promise::bits, 0, false, false, "nvfp4", "modelopt"},
    {"sage2_cuda:preset=sm89", "sage2:preset=sm89", Promise::bits, 0, false, false, "bf16"},
    {"exact_cuda", "exact", Promise::rel_l2, 1e-12, true, false, "fp64"},
};

double rel_l2(const ts::Tensor& a, const ts::Tensor& b) {
  double num = 0, den = 0;
  for (size_t i = 0; i < a.data.size(); ++i) {
    const double d = a.data[i] - b.data[i];
    num += d * d;
    den += b.data[i] * b.data[i];
  }
  return std::sqrt(num / den);
}

// Distance in bf16 steps between two bf16 values (sign-magnitude order).
long bf16_steps(double a, double b) {
  auto key = [](double x) {
    const long bits = ts::num::bf16_bits(static_cast<float>(x));
    return (bits & 0x8000) ? -(bits & 0x7FFF) : bits;
  };
  return std::labs(key(a) - key(b));
}

struct Problem {
  ts::SynthResult syn;
  ts::AttentionProblem p;
};

const Problem& problem(const std::string& preset) {
  static std::map<std::string, Problem> cache;
  auto it = cache.find(preset);
  if (it == cache.end()) {
    ts::SynthOptions so;
    so.preset = preset;
    so.seed = 3;
    Problem& pr = cache[preset];
    pr.syn = ts::synthesize(so);
    pr.p = ts::make_attention_problem(pr.syn.dataset("/attention/q"), pr.syn.dataset("/attention/k"),
                                      pr.syn.dataset("/attention/v"), pr.syn.config);
    return pr;
  }
  return it->second;
}

const ts::BlockInputs& block_inputs(const std::string& preset) {
  static std::map<std::string, ts::BlockInputs> cache;
  auto it = cache.find(preset);
  if (it == cache.end()) {
    ts::SynthOptions so;
    so.preset = preset;
    so.seed = 3;
    return cache[preset] = ts::synthesize_block_inputs(so, problem(preset).syn);
  }
  return it->second;
}

// What a row compares: one output (attention) or every stage (block).
struct Run {
  std::map<std::string, ts::Tensor> out;
  nlohmann::json stats;
  double device_ms = -1;
};

Run run_case(const DeviceCase& c, const std::string& preset, bool device) {
  auto attention = ts::make_attention_backend(device ? c.device : c.host, {});
  if (device) REQUIRE(attention->device() == "cuda");
  Run r;
  if (!c.linear) {
    ts::AttentionResult a = attention->run(problem(preset).p);
    r.device_ms = a.stats.contains("device_ms") ? a.stats["device_ms"].get<double>() : -1;
    r.out["attention"] = std::move(a.out);
    r.stats = a.stats;
    for (auto& [k, t] : a.intermediates) r.out["intermediates/" + k] = std::move(t);
    return r;
  }
  ts::BlockOptions bo;
  bo.linear = ts::linear_mode_from_name(c.linear);
  bo.recipe = c.recipe;
  const ts::BlockBackendKind kind = ts::block_backend(device ? "block_cuda" : "block");
  REQUIRE(kind.device == device);
  ts::BlockResult b = kind.run(block_inputs(preset), *attention, bo);
  REQUIRE(b.stages.size() == ts::block_stage_names().size());
  r.out = std::move(b.stages);
  r.device_ms = b.total_ms;  // the block's column: its whole run (wall ms)
  return r;
}

std::string row_name(const DeviceCase& c) {
  if (!c.linear) return c.device;
  std::string lin = c.linear;
  if (lin == "nvfp4") lin += std::string("-") + c.recipe;
  return "block_cuda " + lin + " " + c.device;
}

bool with_medium() {
  const char* env = std::getenv("TOUCHSTONE_CUDA_MEDIUM");
  return env && std::string(env) == "1";
}

}  // namespace

TEST_CASE("every device backend against its host reference") {
  std::string why;
  if (!ts::cuda::device_available(&why)) {
    std::cout << "skipped: no CUDA device (" << why << ")\n";
    return;
  }
  // medium costs minutes of host time per row: on when TOUCHSTONE_CUDA_MEDIUM=1.
  std::vector<std::string> presets{"tiny", "ci"};
  if (with_medium()) presets.push_back("medium");
  std::printf("%-62s %-7s %-8s %10s %8s %10s %10s %9s\n", "device backend", "preset", "promise", "differ",
              "max_ulp", "max_abs", "rel_l2", "device_ms");
  for (const std::string& preset : presets) {
    for (const DeviceCase& c : kCases) {
      if (preset == "medium" && !c.medium) continue;
      const Run host = run_case(c, preset, false);
      const Run dev = run_case(c, preset, true);
      // Each compared tensor: the attention output, or every block stage.
      for (const auto& [key, h] : host.out) {
        if (key.rfind("intermediates/", 0) == 0) continue;
        REQUIRE(dev.out.count(key) == 1);
        const ts::Tensor& d = dev.out.at(key);
        REQUIRE(d.shape == h.shape);
        REQUIRE(d.dtype == h.dtype);
        size_t differ = 0, nan = 0, first = 0, beyond = 0;
        long max_ulp = 0;
        double host_max = 0, max_abs = 0;
        for (const double x : h.data) host_max = std::max(host_max, std::fabs(x));
        for (size_t i = 0; i < h.data.size(); ++i) {
          const double a = d.data[i], b = h.data[i];
          nan += std::isnan(a) ? 1 : 0;
          if (std::memcmp(&a, &b, sizeof a) != 0 && differ++ == 0) first = i;
          max_abs = std::max(max_abs, std::fabs(a - b));
          if (c.promise == Promise::bf16_ulp) {
            const long steps = bf16_steps(a, b);
            max_ulp = std::max(max_ulp, steps);
            if (steps > 1 && !(std::fabs(a - b) <= std::ldexp(host_max, -16))) ++beyond;
          }
        }
        const double err = rel_l2(d, h);
        const double ms = dev.device_ms;
        const char* promise = c.promise == Promise::bits ? "bits" : c.promise == Promise::bf16_ulp ? "bf16_ulp" : "rel_l2";
        const std::string label = c.linear ? row_name(c) + " " + key : row_name(c);
        std::printf("%-62s %-7s %-8s %10zu %8ld %10.3g %10.3g %9.2f\n", label.c_str(), preset.c_str(), promise, differ,
                    max_ulp, max_abs, err, ms);
        INFO(preset << " " << label << " vs " << c.host << ": " << differ << " of " << h.data.size()
                    << " values differ (first at " << first << ": " << d.data[first] << " vs "
                    << h.data[first] << "), max bf16 steps " << max_ulp << " (" << beyond
                    << " beyond one step and 2^-16 of max|host|), rel_l2 " << err);
        CHECK(nan == 0);
        CHECK(std::isfinite(err));
        CHECK(ms > 0);
        switch (c.promise) {
          case Promise::bits: CHECK(differ == 0); break;
          case Promise::bf16_ulp:
            CHECK(beyond == 0);
            CHECK(differ < h.data.size() / 100);
            CHECK(err < c.bound);
            break;
          case Promise::rel_l2: CHECK(err <= c.bound); break;
        }
      }
      if (c.routing) {
        // The host routes for both; the dumps and densities must say so.
        REQUIRE(dev.out.count("intermediates/route_mask") == 1);
        CHECK(dev.out.at("intermediates/route_mask").data == host.out.at("intermediates/route_mask").data);
        CHECK(dev.stats["density"] == host.stats["density"]);
        CHECK(dev.stats["density_per_head"] == host.stats["density_per_head"]);
      }
    }
  }
  // The identity switches and dumps of sage2 stay on the host: bad input, not a wrong answer.
  CHECK_THROWS_AS(ts::make_attention_backend("sage2_cuda:quant_qk=off", {}), ts::InputError);
  CHECK_THROWS_AS(ts::make_attention_backend("sage2_cuda:dump=on", {}), ts::InputError);
  // Tiles beyond the device's shared memory: bad input naming the knobs.
  CHECK_THROWS_AS(ts::make_attention_backend("sol_cuda:block_q=1024,block_k=1024", {})->run(problem("tiny").p),
                  ts::InputError);
}

TEST_CASE("block_cuda linears give the host's bits on shapes no tile divides") {
  std::string why;
  if (!ts::cuda::device_available(&why)) {
    std::cout << "skipped: no CUDA device (" << why << ")\n";
    return;
  }
  // K = 37: a partial NVFP4 block and a bf16 lane tail; 133 x 70 outputs: partial tiles.
  // Values far from bf16 ones (each linear rounds its operands) and a wide range of
  // magnitudes (many distinct block scales); one all-zero weight row (modelopt's scale 1).
  const int64_t rows = 133, K = 37, N = 70;
  auto values = [](int64_t n, uint64_t seed) {
    std::vector<double> v(static_cast<size_t>(n));
    uint64_t st = seed;
    for (double& x : v) {
      st = st * 6364136223846793005ULL + 1442695040888963407ULL;
      const double u = static_cast<double>(st >> 11) / 9007199254740992.0;  // [0, 1)
      x = (u - 0.5) * std::ldexp(1.0, static_cast<int>(st % 9) - 4) * 1.0000001;
    }
    return v;
  };
  const std::vector<double> x = values(rows * K, 1);
  ts::Tensor w({N, K}, ts::DType::f64), b({N}, ts::DType::f64);
  w.data = values(N * K, 2);
  for (int64_t k = 0; k < K; ++k) w.data[static_cast<size_t>(5 * K + k)] = 0.0;
  b.data = values(N, 3);
  struct Mode {
    ts::LinearMode mode;
    const char* recipe;
  };
  const Mode modes[] = {{ts::LinearMode::nvfp4, "te"}, {ts::LinearMode::nvfp4, "te_rcp6"},
                        {ts::LinearMode::nvfp4, "modelopt"}, {ts::LinearMode::bf16, "te"},
                        {ts::LinearMode::fp64, "te"}};
  for (const Mode& m : modes) {
    for (const ts::Tensor* bias : {static_cast<const ts::Tensor*>(nullptr), static_cast<const ts::Tensor*>(&b)}) {
      const ts::blk::LinearSpec spec{m.mode, m.recipe, 32};
      const ts::Tensor host = ts::blk::linear_stage(x.data(), rows, K, w, bias, spec, {rows, N});
      const ts::Tensor dev = ts::cuda::blk::linear_stage(x.data(), rows, K, w, bias, spec, {rows, N});
      REQUIRE(dev.shape == host.shape);
      REQUIRE(dev.dtype == host.dtype);
      size_t differ = 0;
      for (size_t i = 0; i < host.data.size(); ++i)
        differ += std::memcmp(&dev.data[i], &host.data[i], sizeof(double)) != 0 ? 1 : 0;
      const double err = rel_l2(dev, host);
      INFO(ts::linear_mode_name(m.mode) << " " << m.recipe << (bias ? " with bias" : "") << ": " << differ
                                        << " values differ, rel_l2 " << err);
      if (m.mode == ts::LinearMode::fp64) {
        CHECK(err <= 1e-14);
      } else {
        CHECK(differ == 0);
      }
    }
  }
  // The comparison can tell recipes apart: te on the device is not modelopt on the host.
  const ts::Tensor te = ts::cuda::blk::linear_stage(x.data(), rows, K, w, &b, {ts::LinearMode::nvfp4, "te", 32}, {rows, N});
  const ts::Tensor mo = ts::blk::linear_stage(x.data(), rows, K, w, &b, {ts::LinearMode::nvfp4, "modelopt", 32}, {rows, N});
  CHECK(te.data != mo.data);
}

TEST_CASE("sol_cuda over a sweep: each backend reuses the one before only where the inputs match") {
  std::string why;
  if (!ts::cuda::device_available(&why)) {
    std::cout << "skipped: no CUDA device (" << why << ")\n";
    return;
  }
  const ts::AttentionProblem& ci = problem("ci").p;
  const ts::AttentionProblem& tiny = problem("tiny").p;
  struct Step {
    const char* spec;
    const ts::AttentionProblem* p;
    bool reuses;  // the routing-independent preparation comes from the step before
  };
  const Step steps[] = {
      {"sol_cuda:precision=int8_qk_pv,tau=0.5", &ci, false},
      {"sol_cuda:precision=int8_qk_pv,tau=1.3", &ci, true},
      {"sol_cuda:precision=int8_qk_pv,tau=-100,compensation=off", &ci, true},
      {"sol_cuda:precision=int8_qk_pv,selector=topk,round_out=off", &ci, true},
      {"sol_cuda:precision=bf16,tau=1.3", &ci, false},      // other quantisers
      {"sol_cuda:precision=bf16,tau=2", &ci, true},
      {"sol_cuda:precision=bf16,tau=2,block_k=32", &ci, false},  // other key blocks
      {"sol_cuda:precision=bf16,tau=2,block_k=32", &tiny, false},  // another problem
  };
  std::unique_ptr<ts::AttentionBackend> earlier;
  for (const Step& s : steps) {
    auto b = ts::make_attention_backend(s.spec, {});
    if (earlier) b->continue_from(*earlier);
    const ts::AttentionResult chained = b->run(*s.p);
    const ts::AttentionResult fresh = ts::make_attention_backend(s.spec, {})->run(*s.p);
    INFO(s.spec << (s.p == &ci ? " on ci" : " on tiny"));
    REQUIRE(chained.out.shape == fresh.out.shape);
    CHECK(std::memcmp(chained.out.data.data(), fresh.out.data.data(), fresh.out.data.size() * sizeof(double)) == 0);
    CHECK(chained.stats["density"] == fresh.stats["density"]);
    CHECK((chained.stats["prepare_ms"].get<double>() == 0) == s.reuses);
    CHECK(fresh.stats["prepare_ms"].get<double>() > 0);
    earlier = std::move(b);
  }
}

TEST_CASE("exact_cuda takes float64 inputs that are not float32 values as float64") {
  std::string why;
  if (!ts::cuda::device_available(&why)) {
    std::cout << "skipped: no CUDA device (" << why << ")\n";
    return;
  }
  // ci's bf16 inputs scaled by 1 + 2^-40: no longer float32 values, so the float32 upload
  // would round them; the host reference sees the float64 values.
  const ts::SynthResult& syn = problem("ci").syn;
  std::vector<ts::Tensor> t;
  for (const char* name : {"/attention/q", "/attention/k", "/attention/v"}) {
    t.push_back(syn.dataset(name));
    t.back().dtype = ts::DType::f64;
    for (double& x : t.back().data) x *= 1.0 + std::ldexp(1.0, -40);
  }
  const ts::AttentionProblem p = ts::make_attention_problem(t[0], t[1], t[2], syn.config);
  const ts::AttentionResult host = ts::make_attention_backend("exact", {})->run(p);
  const ts::AttentionResult dev = ts::make_attention_backend("exact_cuda", {})->run(p);
  CHECK(rel_l2(dev.out, host.out) < 1e-13);
  // The float32-rounded inputs give another answer at that scale: the test can tell.
  const ts::AttentionResult dev32 = ts::make_attention_backend("exact_cuda", {})->run(problem("ci").p);
  CHECK(rel_l2(dev32.out, host.out) > 1e-13);
}

// Inputs and output cross the bus in chunks of 2^23 values through pinned buffers, each input as float32
// until a value is not one, then again from the start as float64: here 9 M values per tensor (two chunks,
// the second partial), K's float64 values all in the second chunk, after its first chunk went up as float32.
TEST_CASE("exact_cuda's chunked transfers: a float64 value in a later chunk, a partial last chunk") {
  std::string why;
  if (!ts::cuda::device_available(&why)) {
    std::cout << "skipped: no CUDA device (" << why << ")\n";
    return;
  }
  const int64_t S = 1100, H = 64, D = 128;  // 9 011 200 values, 2^23 = 8 388 608 a chunk
  std::mt19937_64 gen(5);
  std::uniform_real_distribution<double> uni(-2.0, 2.0);
  std::vector<ts::Tensor> t;
  for (int i = 0; i < 3; ++i) {
    t.emplace_back(std::vector<int64_t>{S, H, D}, ts::DType::f64);
    for (double& x : t.back().data) x = static_cast<float>(uni(gen));
  }
  ts::BlockConfig cfg;
  cfg.heads = H;
  cfg.head_dim = D;
  cfg.hidden = H * D;
  cfg.segments = {{"text", false, 0, S}};
  cfg.softmax_scale = 1.0 / std::sqrt(static_cast<double>(D));
  const auto run = [&](const char* backend) {
    return ts::make_attention_backend(backend, {})->run(ts::make_attention_problem(t[0], t[1], t[2], cfg));
  };
  const ts::AttentionResult all32 = run("exact_cuda");
  CHECK(all32.stats["f32_inputs"].get<int>() == 3);
  // K's second chunk scaled by 1 + 2^-30: no longer float32 values, and rounding them back would move
  // the output by about 1e-10, which the bound below sees.
  for (size_t i = size_t{1} << 23; i < t[1].data.size(); ++i) t[1].data[i] *= 1.0 + std::ldexp(1.0, -30);
  const ts::AttentionResult mixed = run("exact_cuda"), host = run("exact");
  CHECK(mixed.stats["f32_inputs"].get<int>() == 2);
  CHECK(rel_l2(mixed.out, host.out) < 1e-13);
  // The last output chunk arrived: the last row is the host's too.
  const size_t last = static_cast<size_t>((S - 1) * H * D);
  double d2 = 0, r2 = 0;
  for (size_t i = last; i < mixed.out.data.size(); ++i) {
    d2 += (mixed.out.data[i] - host.out.data[i]) * (mixed.out.data[i] - host.out.data[i]);
    r2 += host.out.data[i] * host.out.data[i];
  }
  CHECK(std::sqrt(d2 / r2) < 1e-13);
}

// The fused kernel's edges, which the presets' shapes do not reach: sequences no tile divides (the
// last key tile and query block part full), each head dim it takes, scores spread so wide that most
// weights are subnormal or zero (its own exp), and a NaN in one key, which must reach exactly the
// outputs of its head, as on the host.
TEST_CASE("exact_cuda's fused kernel on shapes no tile divides, wide scores and a NaN") {
  std::string why;
  if (!ts::cuda::device_available(&why)) {
    std::cout << "skipped: no CUDA device (" << why << ")\n";
    return;
  }
  struct Shape {
    int64_t S, H, D;
    double amp;  // q and k uniform in [-amp, amp]
  };
  for (const Shape sh : {Shape{1, 2, 32, 1.0}, Shape{33, 3, 64, 1.0}, Shape{130, 1, 128, 1.0},
                         Shape{1000, 3, 128, 1.0}, Shape{300, 2, 32, 30.0}, Shape{257, 2, 128, 12.0}}) {
    if (!ts::cuda::exact_flash_unsupported(sh.H, static_cast<int>(sh.D)).empty()) {
      std::cout << "skipped: the fused kernel cannot run here\n";
      return;
    }
    CAPTURE(sh.S, sh.H, sh.D, sh.amp);
    std::mt19937_64 gen(static_cast<uint64_t>(sh.S * 1000 + sh.D));
    std::uniform_real_distribution<double> uni(-1.0, 1.0);
    std::vector<ts::Tensor> t;
    for (double amp : {sh.amp, sh.amp, 1.0}) {
      t.emplace_back(std::vector<int64_t>{sh.S, sh.H, sh.D}, ts::DType::f64);
      for (double& x : t.back().data) x = amp * uni(gen);
    }
    ts::BlockConfig cfg;
    cfg.heads = sh.H;
    cfg.head_dim = sh.D;
    cfg.hidden = sh.H * sh.D;
    cfg.segments = {{"text", false, 0, sh.S}};
    cfg.softmax_scale = 1.0 / std::sqrt(static_cast<double>(sh.D));
    const auto run = [&](const char* backend) {
      const ts::AttentionProblem p = ts::make_attention_problem(t[0], t[1], t[2], cfg);
      return ts::make_attention_backend(backend, {})->run(p).out;
    };
    const ts::Tensor dev = run("exact_cuda:kernel=flash"), host = run("exact");
    CHECK(rel_l2(dev, host) < 1e-13);
    // A NaN in key S/2 of head H-1: every output of that head is NaN, no other.
    t[1].data[static_cast<size_t>(((sh.S / 2) * sh.H + sh.H - 1) * sh.D)] = std::nan("");
    const ts::Tensor dev_nan = run("exact_cuda:kernel=flash"), host_nan = run("exact");
    size_t mismatched = 0;
    for (size_t i = 0; i < dev_nan.data.size(); ++i)
      mismatched += std::isnan(dev_nan.data[i]) != std::isnan(host_nan.data[i]) ? 1 : 0;
    CHECK(mismatched == 0);
    CHECK(std::isnan(dev_nan.data[static_cast<size_t>(sh.H - 1) * static_cast<size_t>(sh.D)]));
  }
}

// The fused kernel's own exp, which takes its argument in units of ln2/128 and computes scaled by 2^64
// (every result normal): within 1 ulp of the exact value (long double), for the arguments attention gives it
// (never positive: exp's arguments from -745 to 0, times 128/ln2), NaN kept, and arguments past the range
// giving a weight below any row sum's last bit rather than garbage.
TEST_CASE("exact_cuda's own exp is within 1 ulp") {
  std::string why;
  if (!ts::cuda::device_available(&why)) {
    std::cout << "skipped: no CUDA device (" << why << ")\n";
    return;
  }
  if (!ts::cuda::exact_flash_unsupported(1, 128).empty()) {
    std::cout << "skipped: the fused kernel cannot run here\n";
    return;
  }
  const double per_ln2 = 128.0 / std::log(2.0);  // exp's argument x is y = x · 128/ln2 here
  std::mt19937_64 gen(11);
  std::vector<double> y;
  for (const double lo : {-745.0, -40.0, -1e-3}) {
    std::uniform_real_distribution<double> uni(lo * per_ln2, 0.0);
    for (int i = 0; i < 400000; ++i) y.push_back(uni(gen));
  }
  // Halfway points and their neighbours, where the nearest integer changes.
  for (const double edge : {0.0, -0.0, -137600.0, -0.5, std::nextafter(-0.5, 0.0), std::nextafter(-0.5, -1.0),
                            -1.0, -127.5, -128.0, -1e-300, -5e-324})
    y.push_back(edge);
  const size_t checked = y.size();
  for (const double beyond : {-137800.0, -1e300, -std::numeric_limits<double>::infinity(), std::nan("")})
    y.push_back(beyond);
  std::vector<double> got(y.size());
  REQUIRE(ts::cuda::exact_flash_exp(y.data(), got.data(), static_cast<long long>(y.size())) == "");
  double worst = 0.0, worst_y = 0.0;
  for (size_t i = 0; i < checked; ++i) {
    const long double exact = std::ldexp(std::exp2(static_cast<long double>(y[i]) / 128.0L), 64);
    const double nearest = static_cast<double>(exact);
    const double ulp = std::nextafter(nearest, INFINITY) - nearest;
    const double err = static_cast<double>(std::fabs(static_cast<long double>(got[i]) - exact)) / ulp;
    if (!(err <= worst)) {
      worst = err;
      worst_y = y[i];
    }
  }
  CAPTURE(worst_y);
  CHECK(worst <= 1.0);
  CHECK(got[checked - 11] == 0x1p64);  // 2^0 exactly, from 0 and -0
  CHECK(got[checked - 10] == 0x1p64);
  CHECK(got[checked - 3] == 0x1p63);  // 2^-1 exactly, from -128
  for (size_t i = checked; i < checked + 3; ++i) CHECK((got[i] >= 0.0 && got[i] < 0x1p-1000));
  CHECK(std::isnan(got.back()));
}

TEST_CASE("exact_cuda runs the kernel asked for, flash where it can") {
  // Bad combinations are refused before any device is touched.
  CHECK_THROWS_AS(ts::make_attention_backend("exact_cuda:kernel=flash,chunk=7", {}), ts::InputError);
  CHECK_THROWS_AS(ts::make_attention_backend("exact_cuda:kernel=tiles", {}), ts::InputError);
  std::string why;
  if (!ts::cuda::device_available(&why)) {
    std::cout << "skipped: no CUDA device (" << why << ")\n";
    return;
  }
  const ts::AttentionProblem& p = problem("tiny").p;
  const bool flash_here = ts::cuda::exact_flash_unsupported(p.q.H, static_cast<int>(p.q.D)).empty();
  const auto kernel = [&](const char* spec) {
    return ts::make_attention_backend(spec, {})->run(p).stats["kernel"].get<std::string>();
  };
  CHECK(kernel("exact_cuda") == (flash_here ? "flash" : "gemm"));
  CHECK(kernel("exact_cuda:kernel=gemm") == "gemm");
  CHECK(kernel("exact_cuda:chunk=7") == "gemm");
  if (flash_here) {
    CHECK(kernel("exact_cuda:kernel=flash") == "flash");
  } else {
    CHECK_THROWS_AS(kernel("exact_cuda:kernel=flash"), ts::InputError);
  }
  // A head dim the flash kernel has no tiles for: refused when asked for, gemm by default.
  CHECK_FALSE(ts::cuda::exact_flash_unsupported(p.q.H, 48).empty());
}
