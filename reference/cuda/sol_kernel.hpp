#pragma once
// The boundary between nvcc-compiled code and the sol mirror's host side:
// plain types only (see exact_kernel.hpp).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "reference/cuda/stored_input.hpp"

namespace ts::cuda {

// The routed sol problem: dimensions and knobs, and the arrays the kernel reads (device
// pointers, made by sol_prepare_device). precision: 0 bf16, 1 int8_qk, 2 int8_qk_pv.
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
  // What only the preparation reads: softmax_scale as given (r is formed in float64), f32(1/S)
  // (the smoothing mean's factor), the element type km is rounded to (0 bf16, 1 fp16, 2 none).
  double softmax_scale = 0;
  float inv_s = 0;
  int km_round = 2;
};

// Everything of a SolDeviceProblem but the mask and the compensation switch,
// on the device: what a sweep over tau prepares once (opaque to the host side).
struct SolDeviceInputs;

// Host clock inside sol_prepare_device (ms): q, k, v to the device; the preparation there.
struct SolPrepareTiming {
  double upload_ms = 0, prepare_ms = 0;
};

// Makes on the device every array sol_prepare_inputs (reference/attention_sol.cpp) makes on the
// host, with the same steps and orders, so the same bits: q, k, v widened head-major; the block
// means k̄, v̄, q̄; r = q̄·k̄·softmax_scale in float64, copied to r_host ([H][QB][VB]) for the
// host's routing; for the int8 variants K's smoothing mean and the INT8 codes of Q and K − km with
// each token's scale; int8_qk_pv's V codes per key block; the pseudo-keys. p: the dimensions and
// knobs, p.blocks and p.ln_n on the host (its array pointers are ignored). nullptr, with *err
// naming the failing CUDA call, on failure.
std::shared_ptr<SolDeviceInputs> sol_prepare_device(const SolDeviceProblem& p, const StoredInput& q, const StoredInput& k,
                                                    const StoredInput& v, double* r_host, SolPrepareTiming* timing,
                                                    std::string* err);

// One prepared array brought back (tests): "q", "k", "v", "q8", "k8", "q_scale", "k_scale", "v8",
// "v8_scale", "pseudo_k", "vbar"; bytes must be its size. "" or what failed.
std::string sol_download(const SolDeviceInputs& in, const char* array, void* dst, size_t bytes);

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
