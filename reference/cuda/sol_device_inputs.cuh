#pragma once
// The sol mirror's arrays on the device (opaque to the host side, sol_kernel.hpp): made by
// sol_prepare_device (sol_prepare.cu), run by sol_attention_device (attention_sol.cu).
#include <cuda_runtime.h>

#include "reference/cuda/device_buffer.cuh"
#include "reference/cuda/sol_kernel.hpp"

namespace ts::cuda {

struct SolDeviceInputs {
  SolDeviceProblem p;  // device pointers; mask and compensation per run
  size_t n, nt, nvd;
  // What p.precision reads (bf16: q, k, v; int8_qk: q, q8, k8, their scales, v; int8_qk_pv: v8 and
  // its scales instead of v); the others hold one element.
  DeviceBuffer<long long> blocks;
  DeviceBuffer<float> q, k, v, qs, ks;
  DeviceBuffer<int8_t> q8, k8, v8;
  DeviceBuffer<float> v8s, pk, vbar, ln_n;
  DeviceBuffer<uint8_t> mask;
  DeviceBuffer<float> acc, out;
  // Pinned: the output comes back at the bus's speed. Made on the first run while its kernel
  // computes (pinning block24's 1.1 GB took a good part of the upload when it was made here), and
  // kept for the runs after it (a sweep reuses these inputs).
  float* host_out = nullptr;
  cudaError_t copy_err = cudaSuccess;

  // h: the dimensions and knobs, h.blocks and h.ln_n on the host (copied here).
  explicit SolDeviceInputs(const SolDeviceProblem& h)
      : p(h),
        n(static_cast<size_t>(h.S * h.H * h.D)),
        nt(static_cast<size_t>(h.H * h.S)),
        nvd(static_cast<size_t>(h.H * h.VB * h.D)),
        blocks(static_cast<size_t>(h.NB * 3)),
        q(n),
        k(h.precision == 0 ? n : 0),
        v(h.precision == 2 ? 0 : n),
        qs(h.precision != 0 ? nt : 0),
        ks(h.precision != 0 ? nt : 0),
        q8(h.precision != 0 ? n : 0),
        k8(h.precision != 0 ? n : 0),
        v8(h.precision == 2 ? n : 0),
        v8s(h.precision == 2 ? static_cast<size_t>(h.H * h.NB * h.D) : 0),
        pk(nvd),
        vbar(nvd),
        ln_n(static_cast<size_t>(h.VB)),
        mask(static_cast<size_t>(h.H * h.QB * h.VB)),
        acc(n),
        out(n) {
    if (err() == cudaSuccess && h.NB > 0)
      copy_err = cudaMemcpy(blocks.p, h.blocks, static_cast<size_t>(h.NB * 3) * sizeof(long long),
                            cudaMemcpyHostToDevice);
    if (err() == cudaSuccess && h.VB > 0)
      copy_err = cudaMemcpy(ln_n.p, h.ln_n, static_cast<size_t>(h.VB) * sizeof(float), cudaMemcpyHostToDevice);
    const bool int8 = h.precision != 0, pv8 = h.precision == 2;
    p.blocks = blocks.p;
    p.mask = mask.p;
    p.q = q.p;
    p.k = int8 ? nullptr : k.p;
    p.v = pv8 ? nullptr : v.p;
    p.q_scale = int8 ? qs.p : nullptr;
    p.k_scale = int8 ? ks.p : nullptr;
    p.q8 = int8 ? q8.p : nullptr;
    p.k8 = int8 ? k8.p : nullptr;
    p.v8 = pv8 ? v8.p : nullptr;
    p.v8_scale = pv8 ? v8s.p : nullptr;
    p.pseudo_k = pk.p;
    p.vbar = vbar.p;
    p.ln_n = ln_n.p;
  }
  ~SolDeviceInputs() {
    if (host_out) cudaFreeHost(host_out);
  }
  SolDeviceInputs(const SolDeviceInputs&) = delete;
  SolDeviceInputs& operator=(const SolDeviceInputs&) = delete;
  cudaError_t err() const {
    for (cudaError_t e : {blocks.err, q.err, k.err, v.err, qs.err, ks.err, q8.err, k8.err, v8.err, v8s.err, pk.err,
                          vbar.err, ln_n.err, mask.err, acc.err, out.err, copy_err})
      if (e != cudaSuccess) return e;
    return cudaSuccess;
  }
};

}  // namespace ts::cuda
