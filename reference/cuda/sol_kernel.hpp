#pragma once
// The boundary between nvcc-compiled code and the sol mirror's host side:
// plain types only (see exact_kernel.hpp).
#include <cstdint>
#include <memory>
#include <string>

namespace ts::cuda {

// The routed sol problem as the host prepared it (reference/attention_sol.hpp
// SolPrepared), all host arrays. precision: 0 bf16, 1 int8_qk, 2 int8_qk_pv.
struct SolDeviceProblem {
  long long S = 0, H = 0, D = 0, QB = 0, VB = 0, NB = 0;
  int block_q = 128, block_k = 64, precision = 0, compensation = 1;
  float scale = 0;                     // f32(softmax_scale)
  const long long* blocks = nullptr;   // [NB][3]: start, length, video index (-1: conditioning)
  const uint8_t* mask = nullptr;       // [H][QB][VB]: 1 routed
  const float* q = nullptr;            // [H][S][D] (every precision: pseudo-key logits)
  const float* k = nullptr;            // [H][S][D] (bf16)
  const float* v = nullptr;            // [H][S][D] (bf16, int8_qk)
  const int8_t* q8 = nullptr;          // [H][S][D] (int8 variants)
  const int8_t* k8 = nullptr;          // [H][S][D] codes of K - km
  const float* q_scale = nullptr;      // [H][S]: each token's scale
  const float* k_scale = nullptr;      // [H][S]
  const int8_t* v8 = nullptr;          // [H][S][D] (int8_qk_pv)
  const float* v8_scale = nullptr;     // [H][NB][D]
  const float* pseudo_k = nullptr;     // [H][VB][D] (compensation)
  const float* vbar = nullptr;         // [H][VB][D]
  const float* ln_n = nullptr;         // [VB]
};

// Everything of a SolDeviceProblem but the mask and the compensation switch,
// on the device: what a sweep over tau uploads once (opaque to the host side).
struct SolDeviceInputs;

// Uploads p (p.mask and p.compensation are ignored; pseudo_k and vbar must be
// given). nullptr, with *err naming the failing CUDA call, on failure.
std::shared_ptr<SolDeviceInputs> sol_upload(const SolDeviceProblem& p, std::string* err);

// *out[S*H*D] (float32, before the bf16 rounding) = the sol attention of the
// uploaded problem with this mask ([H][QB][VB], 1 routed) and compensation;
// *out points into `in` and holds until its next run. while_running(ctx), when
// given, runs on the host while the kernel does (the launch is asynchronous).
// Returns an empty string or the failing CUDA call; device_ms: CUDA events
// around the kernel. Runs one at a time per SolDeviceInputs.
std::string sol_attention_device(SolDeviceInputs& in, const uint8_t* mask, int compensation, const float** out,
                                 double* device_ms, void (*while_running)(void*) = nullptr, void* ctx = nullptr);

// Makes this process's CUDA context, the cost of its first CUDA call (a few hundred ms on an
// H100), so that it can be paid on another thread while the host prepares the inputs. An empty
// string, or the failing CUDA call.
std::string make_device_context();

// Bytes of shared memory a block needs (query tile, key tile, logits, row state).
long long sol_shared_bytes(long long block_q, long long block_k, long long D);

}  // namespace ts::cuda
