// Example host plugin (touchstone_kernel.h): plain attention on the CPU, one
// query row at a time, so that CI machines without a GPU exercise the whole
// plugin path (dlopen, the isolation probe, the gate) on a real kernel.
//   touchstone gate --candidate plugin:build/libtsk_host_attention.so,accumulate=fp32 ...
// Keys: accumulate=fp32|fp64 (scores, softmax and P.V), output=f32|bf16.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "kernels_under_test/touchstone_kernel.h"

namespace {

float decode(const tsk_tensor& t, int64_t s, int64_t h, int64_t d) {
  const int64_t i = s * t.stride_s + h * t.stride_h + d * t.stride_d;
  if (t.dtype == TSK_F32) return static_cast<const float*>(t.data)[i];
  const uint16_t b = static_cast<const uint16_t*>(t.data)[i];
  uint32_t u;
  if (t.dtype == TSK_BF16) {
    u = static_cast<uint32_t>(b) << 16;
  } else {  // binary16: rebias the exponent; subnormals scaled exactly
    const uint32_t sign = (b & 0x8000u) << 16, e = (b >> 10) & 0x1Fu, m = b & 0x3FFu;
    if (e == 0) {
      const float x = std::ldexp(static_cast<float>(m), -24);
      return sign ? -x : x;
    }
    u = sign | (e == 31 ? 0x7F800000u | (m << 13) : ((e + 112) << 23) | (m << 13));
  }
  float x;
  std::memcpy(&x, &u, 4);
  return x;
}

uint16_t bf16_rne(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((u >> 16) | 0x40u);
  return static_cast<uint16_t>((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}

template <class Acc>
void attend(const tsk_attention_args& a, bool bf16_out) {
  const int64_t S = a.q.S, H = a.q.H, D = a.q.D, Dv = a.v.D;
  std::vector<Acc> q(D), p(static_cast<size_t>(a.k.S)), o(Dv);
  for (int64_t h = 0; h < H; ++h)
    for (int64_t s = 0; s < S; ++s) {
      for (int64_t d = 0; d < D; ++d) q[d] = decode(a.q, s, h, d);
      Acc mx = -std::numeric_limits<Acc>::infinity();
      for (int64_t t = 0; t < a.k.S; ++t) {
        Acc dot = 0;
        for (int64_t d = 0; d < D; ++d) dot += q[d] * static_cast<Acc>(decode(a.k, t, h, d));
        p[t] = dot * static_cast<Acc>(a.softmax_scale);
        mx = std::max(mx, p[t]);
      }
      Acc sum = 0;
      for (auto& x : p) sum += (x = std::exp(x - mx));
      std::fill(o.begin(), o.end(), Acc(0));
      for (int64_t t = 0; t < a.k.S; ++t)
        for (int64_t d = 0; d < Dv; ++d) o[d] += p[t] * static_cast<Acc>(decode(a.v, t, h, d));
      for (int64_t d = 0; d < Dv; ++d) {
        const float y = static_cast<float>(o[d] / sum);
        const int64_t i = s * a.out.stride_s + h * a.out.stride_h + d * a.out.stride_d;
        if (bf16_out)
          static_cast<uint16_t*>(a.out.data)[i] = bf16_rne(y);
        else
          static_cast<float*>(a.out.data)[i] = y;
      }
    }
}

void say(char* err, size_t n, const std::string& m) { std::snprintf(err, n, "%s", m.c_str()); }

}  // namespace

struct tsk_kernel {
  bool fp64 = false, bf16_out = false;
  std::string name, params;
};

extern "C" {

uint32_t tsk_abi_version(void) { return TSK_ABI_VERSION; }

tsk_status tsk_init(const char* const* keys, const char* const* values, int64_t n, tsk_kernel** kernel,
                    tsk_kernel_info* info, char* err, size_t err_size) {
  tsk_kernel k;
  for (int64_t i = 0; i < n; ++i) {
    const std::string key = keys[i], value = values[i];
    if (key == "accumulate" && (value == "fp32" || value == "fp64")) {
      k.fp64 = value == "fp64";
    } else if (key == "output" && (value == "f32" || value == "bf16")) {
      k.bf16_out = value == "bf16";
    } else {
      say(err, err_size, key == "accumulate" || key == "output"
                             ? key + "=" + value + ": accumulate takes fp32|fp64, output f32|bf16"
                             : "unknown key '" + key + "' (known: accumulate, output)");
      return TSK_INVALID_ARGUMENT;
    }
  }
  k.name = std::string("host_attention_") + (k.fp64 ? "fp64" : "fp32") + (k.bf16_out ? "_bf16" : "");
  k.params = std::string("{\"accumulate\":\"") + (k.fp64 ? "fp64" : "fp32") + "\",\"output\":\"" +
             (k.bf16_out ? "bf16" : "f32") + "\"}";
  info->device = TSK_HOST;
  info->output_dtype = k.bf16_out ? TSK_BF16 : TSK_F32;
  *kernel = new tsk_kernel(k);
  return TSK_OK;
}

const char* tsk_name(const tsk_kernel* k) { return k->name.c_str(); }
const char* tsk_params_json(const tsk_kernel* k) { return k->params.c_str(); }

tsk_status tsk_run(tsk_kernel* k, const tsk_attention_args* a, char* err, size_t err_size) {
  if (a->q.D != a->k.D || a->q.H != a->k.H || a->k.H != a->v.H || a->k.S != a->v.S) {
    say(err, err_size, "q, k, v disagree in heads, head dim or key count");
    return TSK_INVALID_ARGUMENT;
  }
  if (k->fp64)
    attend<double>(*a, k->bf16_out);
  else
    attend<float>(*a, k->bf16_out);
  return TSK_OK;
}

void tsk_destroy(tsk_kernel* k) { delete k; }

}  // extern "C"
