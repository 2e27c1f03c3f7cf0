// A kernel under test with a planted cliff (touchstone scan's test, docs/scan.md): plain
// float attention on the host, correct up to `cliff` tokens and 1.5x its output above, as a
// kernel whose accumulator overflows past some length would be. Keys: cliff=N (required).
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "kernels_under_test/touchstone_kernel.h"

struct tsk_kernel {
  long long cliff = 0;
  std::string name, params;
};

namespace {

float bf16(const tsk_tensor& t, int64_t s, int64_t h, int64_t d) {
  const int64_t i = s * t.stride_s + h * t.stride_h + d * t.stride_d;
  if (t.dtype == TSK_F32) return static_cast<const float*>(t.data)[i];
  const uint32_t u = static_cast<uint32_t>(static_cast<const uint16_t*>(t.data)[i]) << 16;
  float x;
  std::memcpy(&x, &u, 4);
  return x;
}

}  // namespace

extern "C" {

uint32_t tsk_abi_version(void) { return TSK_ABI_VERSION; }

tsk_status tsk_init(const char* const* keys, const char* const* values, int64_t n, tsk_kernel** kernel,
                    tsk_kernel_info* info, char* err, size_t err_size) {
  auto* k = new tsk_kernel;
  for (int64_t i = 0; i < n; ++i) {
    char* end = nullptr;
    if (std::string(keys[i]) == "cliff" && (k->cliff = std::strtoll(values[i], &end, 10)) > 0 && *end == 0) continue;
    std::snprintf(err, err_size, "%s=%s: the only key is cliff=N (N > 0 tokens)", keys[i], values[i]);
    delete k;
    return TSK_INVALID_ARGUMENT;
  }
  if (k->cliff <= 0) {
    std::snprintf(err, err_size, "cliff=N is required");
    delete k;
    return TSK_INVALID_ARGUMENT;
  }
  k->name = "cliff_at_" + std::to_string(k->cliff);
  k->params = "{\"cliff\":" + std::to_string(k->cliff) + "}";
  info->device = TSK_HOST;
  info->output_dtype = TSK_F32;
  *kernel = k;
  return TSK_OK;
}

const char* tsk_name(const tsk_kernel* k) { return k->name.c_str(); }
const char* tsk_params_json(const tsk_kernel* k) { return k->params.c_str(); }

tsk_status tsk_run(tsk_kernel* k, const tsk_attention_args* a, char*, size_t) {
  const int64_t S = a->q.S, T = a->k.S, H = a->q.H, D = a->q.D;
  const float gain = S > k->cliff ? 1.5f : 1.0f;
  std::vector<float> p(static_cast<size_t>(T)), o(static_cast<size_t>(D));
  for (int64_t h = 0; h < H; ++h)
    for (int64_t s = 0; s < S; ++s) {
      float mx = -INFINITY;
      for (int64_t t = 0; t < T; ++t) {
        float dot = 0;
        for (int64_t d = 0; d < D; ++d) dot += bf16(a->q, s, h, d) * bf16(a->k, t, h, d);
        p[t] = dot * static_cast<float>(a->softmax_scale);
        mx = std::fmax(mx, p[t]);
      }
      float sum = 0;
      for (auto& x : p) sum += (x = std::exp(x - mx));
      std::fill(o.begin(), o.end(), 0.0f);
      for (int64_t t = 0; t < T; ++t)
        for (int64_t d = 0; d < D; ++d) o[d] += p[t] * bf16(a->v, t, h, d);
      float* out = static_cast<float*>(a->out.data);
      for (int64_t d = 0; d < D; ++d) out[s * a->out.stride_s + h * a->out.stride_h + d * a->out.stride_d] = gain * o[d] / sum;
    }
  return TSK_OK;
}

void tsk_destroy(tsk_kernel* k) { delete k; }

}  // extern "C"
