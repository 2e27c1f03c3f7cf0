#include "kernels_under_test/cuda/plugin_device.hpp"

#include <cuda_runtime.h>

#include <string>

#include "kernels_under_test/plugin_library.hpp"
#include "reference/cuda/exact_kernel.hpp"

namespace ts::cuda {
namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw PluginError(std::string("CUDA ") + what + ": " + cudaGetErrorString(e));
}

size_t bytes_of(const tsk_tensor& t) {
  return static_cast<size_t>(t.S * t.H * t.D) * (t.dtype == TSK_F32 ? 4u : 2u);
}

// Releases everything on every path, also when the plugin's call throws.
struct DeviceRun {
  void* buf[4] = {nullptr, nullptr, nullptr, nullptr};
  cudaStream_t stream = nullptr;
  cudaEvent_t start = nullptr, stop = nullptr;
  ~DeviceRun() {
    if (stream) cudaStreamSynchronize(stream);
    for (void* b : buf) cudaFree(b);
    if (start) cudaEventDestroy(start);
    if (stop) cudaEventDestroy(stop);
    if (stream) cudaStreamDestroy(stream);
  }
};

}  // namespace

double run_plugin_on_device(const tsk_attention_args& host,
                            const std::function<void(const tsk_attention_args&)>& call) {
  std::string why;
  if (!device_available(&why)) throw PluginError("a TSK_CUDA plugin needs a CUDA device (" + why + ")");
  DeviceRun r;
  tsk_attention_args dev = host;
  tsk_tensor* t[4] = {&dev.q, &dev.k, &dev.v, &dev.out};
  for (int i = 0; i < 4; ++i) {
    check(cudaMalloc(&r.buf[i], bytes_of(*t[i])), "cudaMalloc");
    if (i < 3) check(cudaMemcpy(r.buf[i], t[i]->data, bytes_of(*t[i]), cudaMemcpyHostToDevice), "cudaMemcpy to device");
    t[i]->data = r.buf[i];
  }
  // A NaN pattern, so an output the kernel never writes cannot pass as zeros.
  check(cudaMemset(r.buf[3], 0xFF, bytes_of(dev.out)), "cudaMemset");
  check(cudaStreamCreateWithFlags(&r.stream, cudaStreamNonBlocking), "cudaStreamCreate");
  check(cudaEventCreate(&r.start), "cudaEventCreate");
  check(cudaEventCreate(&r.stop), "cudaEventCreate");
  dev.stream = r.stream;
  check(cudaDeviceSynchronize(), "before the plugin's run");
  check(cudaEventRecord(r.start, r.stream), "cudaEventRecord");
  call(dev);
  check(cudaEventRecord(r.stop, r.stream), "cudaEventRecord");
  check(cudaEventSynchronize(r.stop), "in the plugin's work on the stream");
  check(cudaGetLastError(), "after the plugin's run");
  float ms = 0;
  check(cudaEventElapsedTime(&ms, r.start, r.stop), "cudaEventElapsedTime");
  check(cudaMemcpy(host.out.data, r.buf[3], bytes_of(host.out), cudaMemcpyDeviceToHost), "cudaMemcpy to host");
  return ms;
}

}  // namespace ts::cuda
