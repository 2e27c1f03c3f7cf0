#include "reference/cuda/block.hpp"

#include <algorithm>
#include <chrono>
#include <map>
#include <string>

#include "core/error.hpp"
#include "core/progress.hpp"
#include "core/stopwatch.hpp"
#include "reference/block_stages.hpp"
#include "reference/cuda/block_kernel.hpp"
#include "reference/cuda/exact_kernel.hpp"
#include "reference/numerics/detmath.hpp"
#include "reference/numerics/nvfp4.hpp"
#include "reference/rope.hpp"

namespace ts::cuda {
namespace {

using blockdev::Buffer;

void check(const std::string& err, const std::string& what) {
  if (!err.empty()) throw InternalError("block_cuda: " + what + ": " + err);
}

Buffer alloc(size_t n, bool f64) {
  Buffer b;
  check(b.alloc(n, f64 ? 8 : 4), "device allocation of " + std::to_string(n) + " values");
  return b;
}

// The host side's copies, in chunks through one page-locked staging buffer
// (from pageable memory the bus runs at a fraction of its speed), converting
// in parallel on the way.
class Transfers {
 public:
  Transfers() { check(staging_.alloc(kStagingBytes), "staging buffer"); }

  // A device copy of n host values: float64, or each converted to float32 by
  // `conv` (the host's own conversion at that point).
  template <class Conv>
  Buffer upload(const double* p, size_t n, bool f64, Conv conv) {
    Buffer b = alloc(n, f64);
    const size_t chunk = kStagingBytes / (f64 ? 8 : 4);
    for (size_t i0 = 0; i0 < n; i0 += chunk) {
      const int64_t m = static_cast<int64_t>(std::min(chunk, n - i0));
      const double* src = p + i0;
      if (f64) {
        double* d = static_cast<double*>(staging_.get());
#pragma omp parallel for schedule(static) if (m > kParallelMin)
        for (int64_t i = 0; i < m; ++i) d[i] = src[i];
      } else {
        float* d = static_cast<float*>(staging_.get());
#pragma omp parallel for schedule(static) if (m > kParallelMin)
        for (int64_t i = 0; i < m; ++i) d[i] = conv(src[i]);
      }
      check(b.upload_part(i0, static_cast<size_t>(m), staging_.get()), "upload");
    }
    return b;
  }
  // static_cast<float>: how the host's stages read x, modulation, norm weights.
  Buffer upload_plain(const double* p, size_t n, bool f64) {
    return upload(p, n, f64, [](double v) { return static_cast<float>(v); });
  }
  // bf16_round_f64: how the host's linears read weights, biases, activations.
  Buffer upload_bf16(const double* p, size_t n) {
    return upload(p, n, false, [](double v) { return ts::blk::bf16_round_f64(v); });
  }

  // b's values into t (allocated, t.numel() of them).
  void download(const Buffer& b, Tensor& t, bool f64) {
    if (static_cast<size_t>(t.numel()) != b.size())
      throw InternalError("block_cuda: a stage holds " + std::to_string(b.size()) + " values, its shape " +
                          t.shape_string());
    const size_t n = b.size(), chunk = kStagingBytes / (f64 ? 8 : 4);
    for (size_t i0 = 0; i0 < n; i0 += chunk) {
      const int64_t m = static_cast<int64_t>(std::min(chunk, n - i0));
      check(b.download_part(i0, static_cast<size_t>(m), staging_.get()), "download");
      double* dst = t.ptr() + i0;
      if (f64) {
        const double* d = static_cast<const double*>(staging_.get());
#pragma omp parallel for schedule(static) if (m > kParallelMin)
        for (int64_t i = 0; i < m; ++i) dst[i] = d[i];
      } else {
        const float* d = static_cast<const float*>(staging_.get());
#pragma omp parallel for schedule(static) if (m > kParallelMin)
        for (int64_t i = 0; i < m; ++i) dst[i] = d[i];
      }
    }
  }

 private:
  static constexpr size_t kStagingBytes = size_t(64) << 20;
  static constexpr int64_t kParallelMin = 1 << 16;
  blockdev::Pinned staging_;
};

// Zero-filled host tensors, allocated in parallel: touching the pages of a
// block24 run's 40 GB of stage outputs is most of what copying them costs.
std::vector<Tensor> allocate(const std::vector<std::vector<int64_t>>& shapes, DType dtype) {
  std::vector<Tensor> out(shapes.size());
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t i = 0; i < static_cast<int64_t>(shapes.size()); ++i)
    out[static_cast<size_t>(i)] = Tensor(shapes[static_cast<size_t>(i)], dtype);
  return out;
}

// y [rows, N] on the device = the linear of x [rows, K] on the device (bf16
// values in the float modes, as the host's stage inputs are).
Buffer linear(const Buffer& x, int64_t rows, int64_t K, const Tensor& w, const Tensor* b,
              const ts::blk::LinearSpec& spec, Transfers& io) {
  if (w.rank() != 2 || w.dim(1) != K)
    throw InputError("linear: weight shape " + w.shape_string() + " does not take " + std::to_string(K) + " inputs");
  const int64_t N = w.dim(0);
  if (b && (b->rank() != 1 || b->dim(0) != N))
    throw InputError("linear: bias shape " + b->shape_string() + ", expected [" + std::to_string(N) + "]");
  const bool f64 = spec.mode == LinearMode::fp64;
  Buffer y = alloc(static_cast<size_t>(rows * N), f64);
  Buffer bd;
  if (f64) {
    const Buffer wd = io.upload_plain(w.ptr(), static_cast<size_t>(N * K), true);
    if (b) bd = io.upload_plain(b->ptr(), static_cast<size_t>(N), true);
    check(blockdev::linear_f64(x, rows, K, wd, N, bd, y), "fp64 linear");
    return y;
  }
  if (b) bd = io.upload_bf16(b->ptr(), static_cast<size_t>(N));
  Buffer wd = io.upload_bf16(w.ptr(), static_cast<size_t>(N * K));
  if (spec.mode == LinearMode::bf16) {
    check(blockdev::linear_bf16(x, rows, K, wd, N, bd, y), "bf16 linear");
    return y;
  }
  // nvfp4 (block_nvfp4.cpp): the weight's dynamic amax, the activation's over
  // the whole stage input.
  const num::Nvfp4Recipe recipe = num::nvfp4_recipe_from_name(spec.recipe);
  const int64_t Kp = (K + num::kNvfp4Block - 1) / num::kNvfp4Block * num::kNvfp4Block;
  float w_amax = 0, x_amax = 0;
  check(blockdev::amax(wd, static_cast<size_t>(N * K), &w_amax), "weight amax");
  const num::Nvfp4GlobalScale gw = num::nvfp4_global_scale(w_amax, recipe);
  Buffer wq = alloc(static_cast<size_t>(N * Kp), false);
  check(blockdev::nvfp4_quantize(wd, N, K, gw.s_enc, gw.s_dec, recipe, wq), "weight quantisation");
  wd.reset();
  check(blockdev::amax(x, static_cast<size_t>(rows * K), &x_amax), "activation amax");
  const num::Nvfp4GlobalScale gx = num::nvfp4_global_scale(x_amax, recipe);
  Buffer xq = alloc(static_cast<size_t>(rows * Kp), false);
  check(blockdev::nvfp4_quantize(x, rows, K, gx.s_enc, gx.s_dec, recipe, xq), "activation quantisation");
  check(blockdev::nvfp4_gemm(xq, rows, Kp, wq, N, gx.s_dec * gw.s_dec, bd, y), "nvfp4 linear");
  return y;
}

void require_device() {
  std::string why;
  if (!device_available(&why)) throw InputError("block_cuda: no usable CUDA device (" + why + ")");
}

}  // namespace

namespace blk {

Tensor linear_stage(const double* x, int64_t rows, int64_t K, const Tensor& w, const Tensor* b,
                    const ts::blk::LinearSpec& spec, std::vector<int64_t> out_shape) {
  require_device();
  const bool f64 = spec.mode == LinearMode::fp64;
  Transfers io;
  const size_t n = static_cast<size_t>(rows * K);
  const Buffer xd = f64 ? io.upload_plain(x, n, true) : io.upload_bf16(x, n);
  const Buffer y = linear(xd, rows, K, w, b, spec, io);
  check(blockdev::synchronize(), "linear");
  Tensor out(std::move(out_shape), f64 ? DType::f64 : DType::bf16);
  io.download(y, out, f64);
  return out;
}

}  // namespace blk

BlockResult run_block(const BlockInputs& in, AttentionBackend& attention, const BlockOptions& opts) {
  in.validate("block");
  if (opts.linear == LinearMode::nvfp4) {
    if (opts.recipe.empty()) throw InputError("block: nvfp4 needs a recipe (te or modelopt)");
    num::nvfp4_recipe_from_name(opts.recipe);
  }
  for (const auto& k : opts.keep)
    if (!find_block_stage(k)) throw InputError("block: unknown stage '" + k + "'");
  require_device();
  const BlockConfig& c = in.config;
  const int64_t S = in.tokens(), M = c.hidden, H = c.heads, D = c.head_dim, F = c.ffn_hidden;
  const bool f64 = opts.linear == LinearMode::fp64;
  const ts::blk::LinearSpec lin{opts.linear, opts.recipe, opts.chunk_tokens};

  BlockResult res;
  const Stopwatch total;
  Progress progress("block stages (device)", static_cast<int64_t>(block_stage_names().size()));

  // The inputs on the device, read as the host's stages read them.
  const Stopwatch t_in;
  Transfers io;
  const Buffer x = io.upload_plain(in.x.ptr(), static_cast<size_t>(S * M), f64);
  const Buffer mod = io.upload_plain(in.modulation.ptr(), static_cast<size_t>(in.modulation.numel()), f64);
  Buffer mod_row;
  if (!in.modulation_row.empty()) {
    check(mod_row.alloc(static_cast<size_t>(S), 4), "device allocation");
    check(mod_row.upload(in.modulation_row.data()), "upload");
  }
  auto vec = [&](const char* name) {
    const Tensor& t = in.weight(name);
    return io.upload_plain(t.ptr(), static_cast<size_t>(t.numel()), f64);
  };
  const Buffer norm1_w = vec("norm1_w"), norm2_w = vec("norm2_w"), q_norm = vec("q_norm"), k_norm = vec("k_norm");
  // RoPE's cos and sin per token, axis and frequency: the host's detmath
  // values (block_stages.cpp rounds them to float32 in bf16 arithmetic).
  const Rope rope(c);
  const int64_t RF = rope.freqs_per_axis();
  std::vector<double> cosv(static_cast<size_t>(S * 3 * RF)), sinv(cosv.size());
#pragma omp parallel for schedule(static)
  for (int64_t s = 0; s < S; ++s)
    for (int ax = 0; ax < 3; ++ax)
      for (int64_t i = 0; i < RF; ++i) {
        const size_t at = static_cast<size_t>((s * 3 + ax) * RF + i);
        detmath::sincos(in.positions.ptr()[s * 3 + ax] * rope.inv_freq()[static_cast<size_t>(i)], &sinv[at],
                        &cosv[at]);
      }
  const Buffer cosd = io.upload_plain(cosv.data(), cosv.size(), f64);
  const Buffer sind = io.upload_plain(sinv.data(), sinv.size(), f64);
  res.transfer_ms += t_in.ms();

  using St = BlockStage;
  const auto N = [](BlockStage s) { return std::string(stage_name(s)); };
  std::map<std::string, Buffer> dev;
  std::map<std::string, Tensor>& st = res.stages;
  std::map<std::string, std::vector<int64_t>> shapes;
  auto wanted = [&](BlockStage stage) {
    if (opts.keep.empty() || stage == St::output) return true;  // run_block keeps output
    for (const auto& k : opts.keep)
      if (k == N(stage)) return true;
    return false;
  };
  // Stages go to the host together (to_host), so that their host tensors are
  // allocated in parallel; a kept stage stays on the device until then.
  std::vector<std::string> pending;
  auto to_host = [&](const std::vector<std::string>& names) {
    const Stopwatch t;
    std::vector<std::vector<int64_t>> sh;
    for (const auto& name : names) sh.push_back(shapes.at(name));
    std::vector<Tensor> host = allocate(sh, f64 ? DType::f64 : DType::bf16);
    for (size_t i = 0; i < names.size(); ++i) {
      io.download(dev.at(names[i]), host[i], f64);
      st[names[i]] = std::move(host[i]);
    }
    res.transfer_ms += t.ms();
  };
  auto timed = [&](BlockStage stage, std::vector<int64_t> shape, auto&& fn) {
    const std::string name = N(stage);
    const Stopwatch t;
    Buffer out = fn();
    check(blockdev::synchronize(), name);
    res.stage_ms[name] = t.ms();
    dev[name] = std::move(out);
    shapes[name] = std::move(shape);
    if (wanted(stage)) pending.push_back(name);
    progress.advance();
  };
  // A stage no later stage reads leaves the device unless it is still to be
  // copied, and the host unless kept.
  auto done_with = [&](BlockStage stage) {
    const std::string name = N(stage);
    if (std::find(pending.begin(), pending.end(), name) == pending.end()) dev.erase(name);
    if (!wanted(stage)) st.erase(name);
  };
  auto elementwise = [&](BlockStage stage, size_t n, auto&& launch) {
    Buffer out = alloc(n, f64);
    check(launch(out), N(stage));
    return out;
  };
  const size_t SM = static_cast<size_t>(S * M);

  timed(St::norm1, {S, M}, [&] {
    return elementwise(St::norm1, SM, [&](Buffer& o) { return blockdev::rms_norm(x, S, M, norm1_w, c.rms_eps, f64, o); });
  });
  timed(St::modulate1, {S, M}, [&] {
    return elementwise(St::modulate1, SM, [&](Buffer& o) {
      return blockdev::modulate(dev.at(N(St::norm1)), mod, mod_row, S, M, kShiftMsa, kScaleMsa, f64, o);
    });
  });
  done_with(St::norm1);
  timed(St::qkv, {S, 3, H, D}, [&] {
    return linear(dev.at(N(St::modulate1)), S, M, in.weight("w_qkv"), in.bias("b_qkv"), lin, io);
  });
  done_with(St::modulate1);
  const size_t SHD = static_cast<size_t>(S * H * D);
  timed(St::q_rope, {S, H, D}, [&] {
    return elementwise(St::q_rope, SHD, [&](Buffer& o) {
      return blockdev::qk_rope(dev.at(N(St::qkv)), S, H, D, 0, q_norm, c.rms_eps, cosd, sind, RF, f64, o);
    });
  });
  timed(St::k_rope, {S, H, D}, [&] {
    return elementwise(St::k_rope, SHD, [&](Buffer& o) {
      return blockdev::qk_rope(dev.at(N(St::qkv)), S, H, D, 1, k_norm, c.rms_eps, cosd, sind, RF, f64, o);
    });
  });
  {
    // The attention backend reads host arrays, as in the host block.
    to_host({N(St::qkv), N(St::q_rope), N(St::k_rope)});
    for (BlockStage in_stage : {St::qkv, St::q_rope, St::k_rope})
      pending.erase(std::remove(pending.begin(), pending.end(), N(in_stage)), pending.end());
    const std::string name = N(St::attention);
    const Stopwatch t;
    Tensor out = ts::blk::attention_stage(st.at(N(St::qkv)), st.at(N(St::q_rope)), st.at(N(St::k_rope)), c,
                                          attention, f64 ? ts::blk::Arith::f64 : ts::blk::Arith::bf16,
                                          res.attention_stats);
    dev[name] = io.upload_plain(out.ptr(), SHD, f64);
    check(blockdev::synchronize(), name);
    res.stage_ms[name] = t.ms();
    shapes[name] = {S, H, D};
    if (wanted(St::attention)) st[name] = std::move(out);
    progress.advance();
  }
  done_with(St::qkv);
  done_with(St::q_rope);
  done_with(St::k_rope);
  timed(St::out_proj, {S, M}, [&] {
    return linear(dev.at(N(St::attention)), S, H * D, in.weight("w_out"), in.bias("b_out"), lin, io);
  });
  done_with(St::attention);
  timed(St::residual1, {S, M}, [&] {
    return elementwise(St::residual1, SM, [&](Buffer& o) {
      return blockdev::gated_residual(x, dev.at(N(St::out_proj)), mod, mod_row, S, M, kGateMsa, f64, o);
    });
  });
  done_with(St::out_proj);
  timed(St::norm2, {S, M}, [&] {
    return elementwise(St::norm2, SM, [&](Buffer& o) {
      return blockdev::rms_norm(dev.at(N(St::residual1)), S, M, norm2_w, c.rms_eps, f64, o);
    });
  });
  timed(St::modulate2, {S, M}, [&] {
    return elementwise(St::modulate2, SM, [&](Buffer& o) {
      return blockdev::modulate(dev.at(N(St::norm2)), mod, mod_row, S, M, kShiftMlp, kScaleMlp, f64, o);
    });
  });
  done_with(St::norm2);
  timed(St::fc1, {S, 2 * F}, [&] {
    return linear(dev.at(N(St::modulate2)), S, M, in.weight("w_fc1"), in.bias("b_fc1"), lin, io);
  });
  done_with(St::modulate2);
  timed(St::swiglu, {S, F}, [&] {
    return elementwise(St::swiglu, static_cast<size_t>(S * F), [&](Buffer& o) {
      return blockdev::swiglu(dev.at(N(St::fc1)), S, F, f64, o);
    });
  });
  done_with(St::fc1);
  timed(St::fc2, {S, M}, [&] {
    return linear(dev.at(N(St::swiglu)), S, F, in.weight("w_fc2"), in.bias("b_fc2"), lin, io);
  });
  done_with(St::swiglu);
  timed(St::output, {S, M}, [&] {
    return elementwise(St::output, SM, [&](Buffer& o) {
      return blockdev::gated_residual(dev.at(N(St::residual1)), dev.at(N(St::fc2)), mod, mod_row, S, M, kGateMlp,
                                      f64, o);
    });
  });
  done_with(St::residual1);
  done_with(St::fc2);
  to_host(pending);
  dev.clear();
  res.total_ms = total.ms();
  return res;
}

}  // namespace ts::cuda
