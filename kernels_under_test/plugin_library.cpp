#include "kernels_under_test/plugin_library.hpp"

#include <dlfcn.h>

#include <array>
#include <cstring>

namespace ts {
namespace {

constexpr size_t kMessageBytes = 1024;

std::string message_of(const std::array<char, kMessageBytes>& buf) {
  std::string m(buf.data(), strnlen(buf.data(), buf.size()));
  return m.empty() ? "(no message)" : m;
}

bool valid_dtype(int d) { return d == TSK_BF16 || d == TSK_F16 || d == TSK_F32; }

}  // namespace

const char* tsk_status_name(int status) {
  switch (status) {
    case TSK_OK: return "TSK_OK";
    case TSK_INVALID_ARGUMENT: return "TSK_INVALID_ARGUMENT";
    case TSK_UNSUPPORTED: return "TSK_UNSUPPORTED";
    case TSK_DEVICE_ERROR: return "TSK_DEVICE_ERROR";
    case TSK_INTERNAL_ERROR: return "TSK_INTERNAL_ERROR";
  }
  return "unknown status";
}

PluginLibrary::PluginLibrary(const std::string& path) : path_(path) {
  // Never dlclose'd: a CUDA plugin's registered kernels, and any thread a
  // plugin started, must outlive every use, up to the process's exit.
  void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char* e = dlerror();
    throw PluginError("cannot load plugin " + path + ": " + (e ? e : "dlopen failed"));
  }
  auto sym = [&](const char* n) {
    dlerror();
    void* s = dlsym(h, n);
    if (!s)
      throw PluginError("plugin " + path + " has no symbol " + n +
                        " (a plugin exports the six functions of touchstone_kernel.h with C linkage)");
    return s;
  };
  abi_version = reinterpret_cast<decltype(abi_version)>(sym("tsk_abi_version"));
  init = reinterpret_cast<decltype(init)>(sym("tsk_init"));
  name = reinterpret_cast<decltype(name)>(sym("tsk_name"));
  params_json = reinterpret_cast<decltype(params_json)>(sym("tsk_params_json"));
  run = reinterpret_cast<decltype(run)>(sym("tsk_run"));
  destroy = reinterpret_cast<decltype(destroy)>(sym("tsk_destroy"));
  const uint32_t v = abi_version();
  if (v != TSK_ABI_VERSION)
    throw PluginError("plugin " + path + " was built for ABI version " + std::to_string(v) +
                      "; this touchstone loads version " + std::to_string(TSK_ABI_VERSION) +
                      " (rebuild it against this touchstone_kernel.h)");
}

PluginKernel::PluginKernel(std::shared_ptr<PluginLibrary> lib,
                           const std::vector<std::pair<std::string, std::string>>& params)
    : lib_(std::move(lib)) {
  std::vector<const char*> keys, values;
  for (const auto& [k, v] : params) {
    keys.push_back(k.c_str());
    values.push_back(v.c_str());
  }
  std::array<char, kMessageBytes> err{};
  const int st = lib_->init(keys.data(), values.data(), static_cast<int64_t>(params.size()), &kernel_,
                            &info_, err.data(), err.size());
  if (st != TSK_OK)
    throw PluginError("plugin " + lib_->path() + ": tsk_init failed (" + tsk_status_name(st) +
                      "): " + message_of(err));
  if (!kernel_) throw PluginError("plugin " + lib_->path() + ": tsk_init returned TSK_OK but no kernel");
  try {
    validate();
  } catch (...) {
    lib_->destroy(kernel_);
    throw;
  }
}

void PluginKernel::validate() {
  const std::string where = "plugin " + lib_->path() + ": ";
  if (info_.device != TSK_HOST && info_.device != TSK_CUDA)
    throw PluginError(where + "tsk_init gave device " + std::to_string(info_.device) +
                      " (TSK_HOST or TSK_CUDA)");
  if (!valid_dtype(info_.output_dtype))
    throw PluginError(where + "tsk_init gave output dtype " + std::to_string(info_.output_dtype) +
                      " (TSK_BF16, TSK_F16 or TSK_F32)");
  const char* n = lib_->name(kernel_);
  name_ = n ? n : "";
  if (name_.empty() || name_.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                               "0123456789_.-") != std::string::npos)
    throw PluginError(where + "tsk_name gave '" + name_ + "' (a non-empty name of [A-Za-z0-9_.-])");
  const char* pj = lib_->params_json(kernel_);
  params_ = nlohmann::json::parse(pj ? pj : "", nullptr, false);
  if (params_.is_discarded() || !params_.is_object())
    throw PluginError(where + "tsk_params_json did not give a JSON object");
}

PluginKernel::~PluginKernel() {
  if (kernel_) lib_->destroy(kernel_);
}

void PluginKernel::run(const tsk_attention_args& args) {
  std::array<char, kMessageBytes> err{};
  const int st = lib_->run(kernel_, &args, err.data(), err.size());
  if (st != TSK_OK)
    throw PluginError("plugin " + name_ + " (" + lib_->path() + "): tsk_run failed (" + tsk_status_name(st) +
                      "): " + message_of(err));
}

}  // namespace ts
