// A device plugin whose kernel writes through a wild pointer: the launch
// succeeds, the fault shows up on the stream (cudaErrorIllegalAddress), and it
// is sticky, ruining the CUDA context of the process it ran in. The isolation
// probe meets it in a child process, so the parent's context stays clean.
#include <cuda_runtime.h>

#include "kernels_under_test/touchstone_kernel.h"

namespace {
__global__ void wild_store(float* p) { p[threadIdx.x] = 1.0f; }
}  // namespace

struct tsk_kernel {
  int unused;
};

extern "C" {

uint32_t tsk_abi_version(void) { return TSK_ABI_VERSION; }

tsk_status tsk_init(const char* const*, const char* const*, int64_t, tsk_kernel** kernel,
                    tsk_kernel_info* info, char*, size_t) {
  static tsk_kernel k;
  info->device = TSK_CUDA;
  info->output_dtype = TSK_BF16;
  *kernel = &k;
  return TSK_OK;
}

const char* tsk_name(const tsk_kernel*) { return "bad_device_fault"; }
const char* tsk_params_json(const tsk_kernel*) { return "{}"; }

tsk_status tsk_run(tsk_kernel*, const tsk_attention_args* a, char*, size_t) {
  wild_store<<<1, 32, 0, static_cast<cudaStream_t>(a->stream)>>>(reinterpret_cast<float*>(0x10));
  return TSK_OK;
}

void tsk_destroy(tsk_kernel*) {}

}  // extern "C"
