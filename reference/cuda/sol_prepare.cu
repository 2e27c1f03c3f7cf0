// sol_prepare_inputs (reference/attention_sol.cpp) on the device: q, k and v cross the bus as
// stored (bf16 at block24: 1.6 GB, where the host's float32 copies and INT8 codes were 3.2 GB
// and took the host 1.4 s to make), then every array the kernel reads is made here. Each sum is
// one thread's, in the host's order (tokens in order, then one division; r's dot in channel
// order in float64), each maximum is exact in any order, and the quantisers are the host's
// (sage2_quant.cuh): the same bits as the host's preparation (tests/cuda compares them array by
// array).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "reference/cuda/device_buffer.cuh"
#include "reference/cuda/sage2_quant.cuh"
#include "reference/cuda/sol_device_inputs.cuh"
#include "reference/cuda/sol_kernel.hpp"
#include "reference/cuda/staged_copy.cuh"
#include "reference/numerics/convert.hpp"

namespace ts::cuda {
namespace {

constexpr int kThreads = 256;

unsigned blocks_for(long long n) {
  return static_cast<unsigned>(std::min<long long>((n + kThreads - 1) / kThreads, 1 << 20));
}

// out[h][b][d] = float32 mean of rows [start_b, start_b + len_b) of head h, summed in token order,
// then divided by len_b (the host's block_mean). Blocks from (starts, lens), or when starts is
// null the query blocks: block_q tokens from b * block_q, the last one short.
__global__ void block_mean_kernel(const float* x, long long S, long long H, long long D, long long nb,
                                  const long long* starts, const long long* lens, long long block_q, float* out) {
  for (long long t = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; t < H * nb * D;
       t += static_cast<long long>(gridDim.x) * blockDim.x) {
    const long long d = t % D, b = (t / D) % nb, h = t / (nb * D);
    const long long start = starts ? starts[b] : b * block_q;
    const long long len = starts ? lens[b] : min(block_q, S - start);
    const float* p = x + (h * S + start) * D + d;
    float sum = 0.0f;
    for (long long s = 0; s < len; ++s) sum += p[s * D];
    out[t] = sum / static_cast<float>(len);
  }
}

// r[h][i][j] = (sum over d in order of f64(q̄[h][i][d]) * f64(k̄[h][j][d])) * softmax_scale.
__global__ void routing_score_kernel(const float* qbar, const float* kbar, long long H, long long QB, long long VB,
                                     long long D, double softmax_scale, double* r) {
  for (long long t = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; t < H * QB * VB;
       t += static_cast<long long>(gridDim.x) * blockDim.x) {
    const long long j = t % VB, i = (t / VB) % QB, h = t / (QB * VB);
    const float* qb = qbar + (h * QB + i) * D;
    const float* kb = kbar + (h * VB + j) * D;
    double dot = 0.0;
    for (long long d = 0; d < D; ++d) dot += static_cast<double>(qb[d]) * static_cast<double>(kb[d]);
    r[t] = dot * softmax_scale;
  }
}

// int8_qk_pv's V: per (head, key block, channel) amax from 1e-7, scale amax/127, codes
// rni.sat(x * (127/amax)) (the host's quantize_v_int8_blocks).
__global__ void v_int8_blocks_kernel(const float* v, long long S, long long H, long long D, long long NB,
                                     const long long* blocks, int8_t* v8, float* v8_scale) {
  for (long long t = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; t < H * NB * D;
       t += static_cast<long long>(gridDim.x) * blockDim.x) {
    const long long d = t % D, b = (t / D) % NB, h = t / (NB * D);
    const long long start = blocks[b * 3], len = blocks[b * 3 + 1];
    const float* x = v + h * S * D + d;
    float amax = 1e-7f;
    for (long long s = start; s < start + len; ++s) amax = fmaxf(amax, fabsf(x[s * D]));
    const float mult = 127.0f / amax;
    v8_scale[t] = amax / 127.0f;
    for (long long s = start; s < start + len; ++s) v8[(h * S + s) * D + d] = num::int8_rni_sat(x[s * D] * mult);
  }
}

// sol_pseudo_key: k̄, or k̄ − km for the int8 variants.
__global__ void pseudo_key_kernel(const float* kbar, const float* km, long long H, long long VB, long long D,
                                  float* pk) {
  for (long long t = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; t < H * VB * D;
       t += static_cast<long long>(gridDim.x) * blockDim.x) {
    pk[t] = km ? kbar[t] - km[(t / (VB * D)) * D + t % D] : kbar[t];
  }
}

}  // namespace

std::shared_ptr<SolDeviceInputs> sol_prepare_device(const SolDeviceProblem& p, const StoredInput& q, const StoredInput& k,
                                                    const StoredInput& v, double* r_host, SolPrepareTiming* timing,
                                                    std::string* err) {
  const auto fail = [err](const char* what, cudaError_t e) {
    *err = cuda_failure(what, e);
    return std::shared_ptr<SolDeviceInputs>();
  };
  const auto t0 = Clock::now();
  auto in = std::make_shared<SolDeviceInputs>(p);
  if (const cudaError_t e = in->err(); e != cudaSuccess) return fail("device buffers", e);
  const long long S = p.S, H = p.H, D = p.D, QB = p.QB, VB = p.VB, NB = p.NB;
  const size_t n = in->n, nvd = in->nvd;
  const bool bf16 = p.precision == 0, int8 = !bf16, pv8 = p.precision == 2;

  // Float32 head-major: q and (bf16) k and (not int8_qk_pv) v are kept; the others are scratch.
  DeviceBuffer<float> k_scratch(bf16 ? 0 : n), v_scratch(pv8 ? n : 0);
  if (k_scratch.err != cudaSuccess) return fail("k buffer", k_scratch.err);
  if (v_scratch.err != cudaSuccess) return fail("v buffer", v_scratch.err);
  float* kf = bf16 ? in->k.p : k_scratch.p;
  float* vf = pv8 ? v_scratch.p : in->v.p;
  cudaError_t e;
  double upload_ms = 0;
  {
    const char* what = "";
    if ((e = sage2::inputs_head_major(q, k, v, S, H, D, in->q.p, kf, vf, &upload_ms, &what)) != cudaSuccess)
      return fail(what, e);
  }

  // The video blocks' starts and lengths, in video order.
  std::vector<long long> vstart(static_cast<size_t>(VB)), vlen(static_cast<size_t>(VB));
  for (long long b = 0; b < NB; ++b)
    if (const long long j = p.blocks[b * 3 + 2]; j >= 0) {
      vstart[static_cast<size_t>(j)] = p.blocks[b * 3];
      vlen[static_cast<size_t>(j)] = p.blocks[b * 3 + 1];
    }
  DeviceBuffer<long long> dstart(static_cast<size_t>(VB)), dlen(static_cast<size_t>(VB));
  DeviceBuffer<float> kbar(nvd), qbar(static_cast<size_t>(H * QB * D)), km(static_cast<size_t>(H * D));
  DeviceBuffer<double> r(static_cast<size_t>(H * QB * VB));
  for (cudaError_t be : {dstart.err, dlen.err, kbar.err, qbar.err, km.err, r.err})
    if (be != cudaSuccess) return fail("preparation buffers", be);
  if (VB > 0) {
    if ((e = cudaMemcpy(dstart.p, vstart.data(), vstart.size() * 8, cudaMemcpyHostToDevice)) != cudaSuccess ||
        (e = cudaMemcpy(dlen.p, vlen.data(), vlen.size() * 8, cudaMemcpyHostToDevice)) != cudaSuccess)
      return fail("video blocks", e);
    block_mean_kernel<<<blocks_for(H * VB * D), kThreads>>>(kf, S, H, D, VB, dstart.p, dlen.p, 0, kbar.p);
    block_mean_kernel<<<blocks_for(H * VB * D), kThreads>>>(vf, S, H, D, VB, dstart.p, dlen.p, 0, in->vbar.p);
    block_mean_kernel<<<blocks_for(H * QB * D), kThreads>>>(in->q.p, S, H, D, QB, nullptr, nullptr, p.block_q,
                                                            qbar.p);
    routing_score_kernel<<<blocks_for(H * QB * VB), kThreads>>>(qbar.p, kbar.p, H, QB, VB, D, p.softmax_scale, r.p);
    if ((e = cudaGetLastError()) != cudaSuccess) return fail("block means and r", e);
  }
  if (int8) {
    const auto round = static_cast<sage2::Round>(p.km_round);
    if ((e = sage2::smoothing_mean(kf, S, H, D, p.inv_s, round, km.p)) != cudaSuccess) return fail("smoothing mean", e);
    // K − km in place: the float k is not read after its block means.
    if ((e = sage2::subtract_mean(kf, km.p, S, H, D, false, round, kf)) != cudaSuccess) return fail("k - km", e);
    if ((e = sage2::quantize_int8(in->q.p, S, H, D, {false, true, 128, 32}, in->q8.p, in->qs.p)) != cudaSuccess)
      return fail("q codes", e);
    if ((e = sage2::quantize_int8(kf, S, H, D, {false, false, 64, 64}, in->k8.p, in->ks.p)) != cudaSuccess)
      return fail("k codes", e);
  }
  if (pv8) {
    v_int8_blocks_kernel<<<blocks_for(H * NB * D), kThreads>>>(vf, S, H, D, NB, in->blocks.p, in->v8.p, in->v8s.p);
    if ((e = cudaGetLastError()) != cudaSuccess) return fail("v codes", e);
  }
  if (VB > 0) {
    pseudo_key_kernel<<<blocks_for(H * VB * D), kThreads>>>(kbar.p, int8 ? km.p : nullptr, H, VB, D, in->pk.p);
    if ((e = cudaGetLastError()) != cudaSuccess) return fail("pseudo keys", e);
  }
  if ((e = cudaDeviceSynchronize()) != cudaSuccess) return fail("preparation", e);
  if (VB > 0 && (e = copy_to_host(r_host, r.p, static_cast<size_t>(H * QB * VB) * 8)) != cudaSuccess)
    return fail("copy r", e);
  if (timing) {
    // The buffers' allocation and the widening count as preparation, the copies as the upload.
    timing->upload_ms = upload_ms;
    timing->prepare_ms = ms_since(t0) - upload_ms;
  }
  return in;
}

std::string sol_download(const SolDeviceInputs& in, const char* array, void* dst, size_t bytes) {
  struct Entry {
    const char* name;
    const void* p;
    size_t bytes;
  };
  const size_t n = in.n, nt = in.nt, nvd = in.nvd;
  const bool int8 = in.p.precision != 0, pv8 = in.p.precision == 2;
  const size_t nbd = static_cast<size_t>(in.p.H * in.p.NB * in.p.D);
  const Entry entries[] = {
      {"q", in.q.p, n * 4},
      {"k", in.p.k, int8 ? 0 : n * 4},
      {"v", in.p.v, pv8 ? 0 : n * 4},
      {"q8", in.p.q8, int8 ? n : 0},
      {"k8", in.p.k8, int8 ? n : 0},
      {"q_scale", in.p.q_scale, int8 ? nt * 4 : 0},
      {"k_scale", in.p.k_scale, int8 ? nt * 4 : 0},
      {"v8", in.p.v8, pv8 ? n : 0},
      {"v8_scale", in.p.v8_scale, pv8 ? nbd * 4 : 0},
      {"pseudo_k", in.pk.p, nvd * 4},
      {"vbar", in.vbar.p, nvd * 4},
  };
  for (const Entry& en : entries) {
    if (std::strcmp(en.name, array) != 0) continue;
    if (!en.p || en.bytes == 0) return std::string(array) + ": not kept at this precision";
    if (en.bytes != bytes)
      return std::string(array) + ": holds " + std::to_string(en.bytes) + " bytes, not " + std::to_string(bytes);
    const cudaError_t e = copy_to_host(dst, en.p, bytes);
    return e == cudaSuccess ? std::string() : cuda_failure("download", e);
  }
  return std::string("no prepared array '") + array + "'";
}

}  // namespace ts::cuda
