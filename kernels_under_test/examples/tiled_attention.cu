// Example device plugin (touchstone_kernel.h): tiled attention on bf16 inputs
// with fp32 accumulation and an online softmax, one pass over the keys, bf16
// output. Simple rather than fast; it shows the ABI a real kernel implements:
// key=value parameters, strides, the caller's stream, status and messages.
//   touchstone gate --baseline sage2_cuda --candidate plugin:build/libtsk_tiled_attention.so,block_k=32 ...
// A block owns kRows query rows of one head (kRowsPerWarp per warp) and walks
// the keys in tiles of block_k staged in shared memory. Within a warp the
// lanes score 32 keys at once, then share each probability with a shuffle
// while every lane accumulates its own channels (d = lane + 32 c).
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "kernels_under_test/touchstone_kernel.h"

namespace {

constexpr int kWarps = 4, kRowsPerWarp = 4, kRows = kWarps * kRowsPerWarp;
constexpr int kMaxChunks = 8;  // head dims up to 32 * 8 = 256

struct Args {
  const __nv_bfloat16 *q, *k, *v;
  __nv_bfloat16* out;
  long long S, H, D;
  long long qs, qh, qd, ks, kh, kd, vs, vh, vd, os, oh, od;
  int block_k;
  float scale_log2;  // softmax_scale * log2(e): scores go through exp2f
};

__device__ float warp_max(float x) {
  for (int o = 16; o > 0; o /= 2) x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, o));
  return x;
}
__device__ float warp_sum(float x) {
  for (int o = 16; o > 0; o /= 2) x += __shfl_xor_sync(0xffffffffu, x, o);
  return x;
}

__global__ void tiled_attention_kernel(Args a) {
  extern __shared__ float smem[];
  const int D = static_cast<int>(a.D), BK = a.block_k, ld = D + 1;  // +1: conflict-free column reads
  float* Ks = smem;         // [BK][D + 1]
  float* Vs = Ks + BK * ld;  // [BK][D]
  float* Qs = Vs + BK * D;  // [kRows][D], pre-scaled
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const long long h = blockIdx.y, row0 = static_cast<long long>(blockIdx.x) * kRows;
  for (int i = threadIdx.x; i < kRows * D; i += blockDim.x) {
    const long long s = row0 + i / D;
    const int d = i % D;
    Qs[i] = s < a.S ? __bfloat162float(a.q[s * a.qs + h * a.qh + d * a.qd]) * a.scale_log2 : 0.0f;
  }
  const int nc = (D + 31) / 32;
  float m[kRowsPerWarp], l[kRowsPerWarp], acc[kRowsPerWarp][kMaxChunks];
  for (int r = 0; r < kRowsPerWarp; ++r) {
    m[r] = -INFINITY;
    l[r] = 0.0f;
    for (int c = 0; c < kMaxChunks; ++c) acc[r][c] = 0.0f;
  }
  for (long long k0 = 0; k0 < a.S; k0 += BK) {
    const int nk = static_cast<int>(min(static_cast<long long>(BK), a.S - k0));
    __syncthreads();
    for (int i = threadIdx.x; i < nk * D; i += blockDim.x) {
      const int j = i / D, d = i % D;
      const long long t = k0 + j;
      Ks[j * ld + d] = __bfloat162float(a.k[t * a.ks + h * a.kh + d * a.kd]);
      Vs[j * D + d] = __bfloat162float(a.v[t * a.vs + h * a.vh + d * a.vd]);
    }
    __syncthreads();
#pragma unroll
    for (int r = 0; r < kRowsPerWarp; ++r) {
      const int row = warp * kRowsPerWarp + r;
      if (row0 + row >= a.S) break;  // warp-uniform
      const float* qr = Qs + row * D;
      for (int j0 = 0; j0 < nk; j0 += 32) {
        const int j = j0 + lane;
        float sc = -INFINITY;
        if (j < nk) {
          float dot = 0.0f;
          for (int d = 0; d < D; ++d) dot += qr[d] * Ks[j * ld + d];
          sc = dot;
        }
        const float m_new = fmaxf(m[r], warp_max(sc));
        const float alpha = exp2f(m[r] - m_new);  // 0 on the first tile (m = -inf)
        const float p = j < nk ? exp2f(sc - m_new) : 0.0f;
        l[r] = l[r] * alpha + warp_sum(p);
        const int nj = min(32, nk - j0);
#pragma unroll
        for (int c = 0; c < kMaxChunks; ++c) acc[r][c] *= alpha;
        for (int jj = 0; jj < nj; ++jj) {
          const float pj = __shfl_sync(0xffffffffu, p, jj);
          const float* vr = Vs + (j0 + jj) * D;
#pragma unroll
          for (int c = 0; c < kMaxChunks; ++c)
            if (c < nc && lane + 32 * c < D) acc[r][c] += pj * vr[lane + 32 * c];
        }
        m[r] = m_new;
      }
    }
  }
#pragma unroll
  for (int r = 0; r < kRowsPerWarp; ++r) {
    const long long s = row0 + warp * kRowsPerWarp + r;
    if (s >= a.S) break;
    const float inv = 1.0f / l[r];
#pragma unroll
    for (int c = 0; c < kMaxChunks; ++c) {
      const int d = lane + 32 * c;
      if (c < nc && d < D) a.out[s * a.os + h * a.oh + d * a.od] = __float2bfloat16_rn(acc[r][c] * inv);
    }
  }
}

void say(char* err, size_t n, const std::string& m) { std::snprintf(err, n, "%s", m.c_str()); }

size_t shared_bytes(int block_k, long long D) {
  return sizeof(float) * static_cast<size_t>(block_k * (D + 1) + block_k * D + kRows * D);
}

}  // namespace

struct tsk_kernel {
  int block_k = 32;
  std::string name, params;
};

extern "C" {

uint32_t tsk_abi_version(void) { return TSK_ABI_VERSION; }

tsk_status tsk_init(const char* const* keys, const char* const* values, int64_t n, tsk_kernel** kernel,
                    tsk_kernel_info* info, char* err, size_t err_size) {
  auto* k = new tsk_kernel;
  for (int64_t i = 0; i < n; ++i) {
    if (std::strcmp(keys[i], "block_k") == 0) {
      char* end = nullptr;
      const long b = std::strtol(values[i], &end, 10);
      if (*values[i] == '\0' || *end != '\0' || b < 1 || b > 128) {
        say(err, err_size, std::string("block_k=") + values[i] + ": an integer in 1..128");
        delete k;
        return TSK_INVALID_ARGUMENT;
      }
      k->block_k = static_cast<int>(b);
    } else {
      say(err, err_size, std::string("unknown key '") + keys[i] + "' (known: block_k)");
      delete k;
      return TSK_INVALID_ARGUMENT;
    }
  }
  k->name = "tiled_attention_bk" + std::to_string(k->block_k);
  k->params = "{\"block_k\":" + std::to_string(k->block_k) +
              ",\"rows_per_block\":" + std::to_string(kRows) +
              ",\"inputs\":\"bf16\",\"accumulate\":\"fp32\",\"output\":\"bf16\"}";
  info->device = TSK_CUDA;
  info->output_dtype = TSK_BF16;
  *kernel = k;
  return TSK_OK;
}

const char* tsk_name(const tsk_kernel* k) { return k->name.c_str(); }
const char* tsk_params_json(const tsk_kernel* k) { return k->params.c_str(); }

tsk_status tsk_run(tsk_kernel* k, const tsk_attention_args* x, char* err, size_t err_size) {
  if (x->q.dtype != TSK_BF16 || x->k.dtype != TSK_BF16 || x->v.dtype != TSK_BF16) {
    say(err, err_size, "tiled_attention takes bf16 q, k, v");
    return TSK_UNSUPPORTED;
  }
  if (x->q.D != x->k.D || x->k.D != x->v.D || x->q.D > 32 * kMaxChunks) {
    say(err, err_size, "tiled_attention needs one head dim <= " + std::to_string(32 * kMaxChunks) +
                           " for q, k, v (got " + std::to_string(x->q.D) + ", " + std::to_string(x->k.D) +
                           ", " + std::to_string(x->v.D) + ")");
    return TSK_UNSUPPORTED;
  }
  if (x->q.S != x->k.S || x->k.S != x->v.S || x->q.H != x->k.H || x->k.H != x->v.H) {
    say(err, err_size, "tiled_attention needs q, k, v of one token count and head count");
    return TSK_INVALID_ARGUMENT;
  }
  if (x->q.S == 0 || x->q.H == 0) return TSK_OK;
  const size_t smem = shared_bytes(k->block_k, x->q.D);
  int dev = 0, optin = 0;
  cudaGetDevice(&dev);
  cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev);
  if (smem > static_cast<size_t>(optin)) {
    say(err, err_size, "block_k=" + std::to_string(k->block_k) + " at head dim " + std::to_string(x->q.D) +
                           " needs " + std::to_string(smem) + " bytes of shared memory (this device: " +
                           std::to_string(optin) + ")");
    return TSK_UNSUPPORTED;
  }
  cudaError_t e = cudaFuncSetAttribute(tiled_attention_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                       static_cast<int>(smem));
  if (e != cudaSuccess) {
    say(err, err_size, std::string("cudaFuncSetAttribute: ") + cudaGetErrorString(e));
    return TSK_DEVICE_ERROR;
  }
  Args a{static_cast<const __nv_bfloat16*>(x->q.data), static_cast<const __nv_bfloat16*>(x->k.data),
         static_cast<const __nv_bfloat16*>(x->v.data), static_cast<__nv_bfloat16*>(x->out.data),
         x->q.S, x->q.H, x->q.D,
         x->q.stride_s, x->q.stride_h, x->q.stride_d, x->k.stride_s, x->k.stride_h, x->k.stride_d,
         x->v.stride_s, x->v.stride_h, x->v.stride_d, x->out.stride_s, x->out.stride_h, x->out.stride_d,
         k->block_k, static_cast<float>(x->softmax_scale * 1.4426950408889634)};
  const dim3 grid(static_cast<unsigned>((x->q.S + kRows - 1) / kRows), static_cast<unsigned>(x->q.H));
  tiled_attention_kernel<<<grid, kWarps * 32, smem, static_cast<cudaStream_t>(x->stream)>>>(a);
  e = cudaGetLastError();
  if (e != cudaSuccess) {
    say(err, err_size, std::string("kernel launch: ") + cudaGetErrorString(e));
    return TSK_DEVICE_ERROR;
  }
  return TSK_OK;
}

void tsk_destroy(tsk_kernel* k) { delete k; }

}  // extern "C"
