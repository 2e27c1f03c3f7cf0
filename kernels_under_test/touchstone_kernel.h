/* touchstone_kernel.h: the C ABI of an attention kernel under test, loaded by
 * `touchstone gate --candidate plugin:PATH.so,key=value` (docs/plugins.md).
 *
 * Plain C so that a kernel built with any compiler (nvcc, clang, gcc, a Rust or
 * Zig toolchain) can be judged in-process on the fixture's tensors. A plugin
 * exports the six functions below with C linkage. Every call that can fail
 * returns a tsk_status and, when it is not TSK_OK, writes a one-line,
 * NUL-terminated message into err (at most err_size bytes, err_size >= 1),
 * which touchstone shows as the candidate's failure.
 *
 * Versioning: tsk_abi_version() must return TSK_ABI_VERSION of the header the
 * plugin was built with; touchstone refuses a plugin of another version before
 * calling anything else. Any change to a struct or signature bumps it. */
#ifndef TOUCHSTONE_KERNEL_H
#define TOUCHSTONE_KERNEL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TSK_ABI_VERSION 1

typedef enum {
  TSK_OK = 0,
  TSK_INVALID_ARGUMENT = 1, /* an unknown or bad key=value, a shape it does not take */
  TSK_UNSUPPORTED = 2,      /* a valid problem this kernel does not implement (dtype, head dim) */
  TSK_DEVICE_ERROR = 3,     /* a failed CUDA (or other device) call */
  TSK_INTERNAL_ERROR = 4
} tsk_status;

/* Where the pointers a kernel receives live. */
typedef enum { TSK_HOST = 0, TSK_CUDA = 1 } tsk_device;

typedef enum {
  TSK_BF16 = 0, /* uint16_t bits of bfloat16 */
  TSK_F16 = 1,  /* uint16_t bits of IEEE binary16 */
  TSK_F32 = 2
} tsk_dtype;

/* A rank-3 tensor [S, H, D] (token, head, channel). Strides are in elements,
 * not bytes; touchstone passes contiguous tensors today, but a kernel must
 * honour the strides it is given. */
typedef struct {
  void* data;
  tsk_dtype dtype;
  int64_t S, H, D;
  int64_t stride_s, stride_h, stride_d;
} tsk_tensor;

/* A contiguous run of tokens of one modality. Every query attends to every
 * key (a packed sequence), so dense kernels may ignore segments; routed
 * (block-sparse) kernels route only over video segments. */
typedef struct {
  const char* name; /* "video", "text", ... */
  int32_t video;    /* 1: a video segment (routable), 0: conditioning */
  int64_t start, length;
} tsk_segment;

typedef struct {
  tsk_tensor q, k, v;  /* inputs, read only, dtype = the fixture's input dtype */
  tsk_tensor out;      /* [S, H, D] of the kernel's output_dtype, to be written */
  const tsk_segment* segments;
  int64_t num_segments;
  double softmax_scale; /* multiply q.k by this before the softmax */
  /* TSK_CUDA: the cudaStream_t to enqueue on. touchstone records CUDA events
   * on this stream around tsk_run and synchronises afterwards: enqueue all
   * work on it, do not synchronise the device or use the legacy default
   * stream. TSK_HOST: NULL; the call is timed by the host steady clock. */
  void* stream;
} tsk_attention_args;

/* What tsk_init tells touchstone about the kernel it made. */
typedef struct {
  tsk_device device;
  tsk_dtype output_dtype;
} tsk_kernel_info;

typedef struct tsk_kernel tsk_kernel; /* opaque, owned by the plugin */

uint32_t tsk_abi_version(void);

/* keys[i]=values[i] are the spec's parameters ("plugin:k.so,block=64" gives
 * block=64). A plugin must reject a key it does not know (TSK_INVALID_ARGUMENT
 * naming it) so that a typo is never silently ignored. On TSK_OK, *kernel is
 * set and *info filled. */
tsk_status tsk_init(const char* const* keys, const char* const* values, int64_t num_params,
                    tsk_kernel** kernel, tsk_kernel_info* info, char* err, size_t err_size);

/* Output group name, [A-Za-z0-9_.-] (e.g. "tiled_attention_bk32"); the
 * returned string lives as long as the kernel. */
const char* tsk_name(const tsk_kernel* kernel);

/* The full parameter set as a JSON object ("{\"block_k\":32}"), written to the
 * report; lives as long as the kernel. */
const char* tsk_params_json(const tsk_kernel* kernel);

/* Computes args->out. May be called many times (warm-up, timed pairs). */
tsk_status tsk_run(tsk_kernel* kernel, const tsk_attention_args* args, char* err, size_t err_size);

void tsk_destroy(tsk_kernel* kernel);

#ifdef __cplusplus
}
#endif

#endif /* TOUCHSTONE_KERNEL_H */
