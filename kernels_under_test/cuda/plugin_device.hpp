#pragma once
// Runs a TSK_CUDA plugin on device copies of the host's tensors, timed by CUDA
// events on the stream it is given (the clock of the device references'
// stats.device_ms), so uploads and downloads count for no one.
#include <functional>

#include "kernels_under_test/touchstone_kernel.h"

namespace ts::cuda {

// `host` holds contiguous host tensors. Copies q, k, v to the device, calls
// `call` with device pointers and a stream between two events, checks the
// stream for errors and copies out back to host.out.data. Returns the events'
// milliseconds. Throws PluginError (the call's, or a failed CUDA call's).
double run_plugin_on_device(const tsk_attention_args& host,
                            const std::function<void(const tsk_attention_args&)>& call);

}  // namespace ts::cuda
