/* Deliberately broken plugins, one per failure the plugin path must survive;
 * CMake builds one library per BAD_* macro (tests/CMakeLists.txt). Each is a
 * valid touchstone_kernel.h plugin except for its one fault, so the test sees
 * that fault and nothing else. */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "kernels_under_test/touchstone_kernel.h"

struct tsk_kernel {
  int unused;
};

static struct tsk_kernel the_kernel;

uint32_t tsk_abi_version(void) {
#ifdef BAD_WRONG_VERSION
  return TSK_ABI_VERSION + 998;
#else
  return TSK_ABI_VERSION;
#endif
}

tsk_status tsk_init(const char* const* keys, const char* const* values, int64_t n, tsk_kernel** kernel,
                    tsk_kernel_info* info, char* err, size_t err_size) {
  (void)keys;
  (void)values;
  (void)n;
#ifdef BAD_INIT
  snprintf(err, err_size, "refuses every configuration (bad_init)");
  (void)kernel;
  (void)info;
  return TSK_INVALID_ARGUMENT;
#else
  (void)err;
  (void)err_size;
  info->device = TSK_HOST;
  info->output_dtype = TSK_F32;
  *kernel = &the_kernel;
  return TSK_OK;
#endif
}

const char* tsk_name(const tsk_kernel* k) {
  (void)k;
  return "bad_plugin";
}

const char* tsk_params_json(const tsk_kernel* k) {
  (void)k;
  return "{}";
}

#ifndef BAD_MISSING_SYMBOL
tsk_status tsk_run(tsk_kernel* k, const tsk_attention_args* a, char* err, size_t err_size) {
  (void)k;
  (void)err;
  (void)err_size;
#if defined(BAD_CRASH)
  volatile int* volatile nowhere = 0; /* opaque to the optimiser: a real store */
  (void)a;
  *nowhere = 1; /* SIGSEGV */
#elif defined(BAD_ABORT)
  (void)a;
  abort();
#elif defined(BAD_HANG)
  (void)a;
  for (;;) pause();
#else /* BAD_NAN: a correct layout, every value NaN */
  float* out = (float*)a->out.data;
  for (int64_t s = 0; s < a->out.S; ++s)
    for (int64_t h = 0; h < a->out.H; ++h)
      for (int64_t d = 0; d < a->out.D; ++d)
        out[s * a->out.stride_s + h * a->out.stride_h + d * a->out.stride_d] = NAN;
#endif
  return TSK_OK;
}
#endif

void tsk_destroy(tsk_kernel* k) { (void)k; }
