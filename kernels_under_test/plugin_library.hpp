#pragma once
// A touchstone_kernel.h plugin opened with dlopen: its symbols, its ABI
// version, and the kernel it makes from key=value parameters. Every failure
// is a PluginError whose message becomes the candidate's status.
#include <memory>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "kernels_under_test/touchstone_kernel.h"

namespace ts {

struct PluginError : std::runtime_error {
  explicit PluginError(const std::string& what) : std::runtime_error(what) {}
};

const char* tsk_status_name(int status);

class PluginLibrary {
 public:
  // Loads the file (RTLD_NOW, so unresolved symbols fail here), finds all six
  // symbols and checks the ABI version before anything else is called.
  explicit PluginLibrary(const std::string& path);
  PluginLibrary(const PluginLibrary&) = delete;
  PluginLibrary& operator=(const PluginLibrary&) = delete;

  const std::string& path() const { return path_; }

  decltype(&tsk_abi_version) abi_version = nullptr;
  decltype(&tsk_init) init = nullptr;
  decltype(&tsk_name) name = nullptr;
  decltype(&tsk_params_json) params_json = nullptr;
  decltype(&tsk_run) run = nullptr;
  decltype(&tsk_destroy) destroy = nullptr;

 private:
  std::string path_;
};

// One kernel made by tsk_init, destroyed with the object.
class PluginKernel {
 public:
  PluginKernel(std::shared_ptr<PluginLibrary> lib,
               const std::vector<std::pair<std::string, std::string>>& params);
  ~PluginKernel();
  PluginKernel(const PluginKernel&) = delete;
  PluginKernel& operator=(const PluginKernel&) = delete;

  const tsk_kernel_info& info() const { return info_; }
  const std::string& name() const { return name_; }
  const nlohmann::json& params() const { return params_; }
  // Throws PluginError with the plugin's status and message.
  void run(const tsk_attention_args& args);

 private:
  void validate();  // what tsk_init and tsk_name, tsk_params_json gave

  std::shared_ptr<PluginLibrary> lib_;
  tsk_kernel* kernel_ = nullptr;
  tsk_kernel_info info_{};
  std::string name_;
  nlohmann::json params_;
};

}  // namespace ts
