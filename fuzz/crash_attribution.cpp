#include "crash_attribution.hpp"

#include <dlfcn.h>
#include <link.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>

namespace ts::fuzz {
namespace {

enum class Owner { kRuntime, kLibrary, kOwn, kOther };

const void* own_base() {
  static const void* base = [] {
    Dl_info info{};
    return ::dladdr(reinterpret_cast<void*>(&own_base), &info) ? info.dli_fbase : nullptr;
  }();
  return base;
}

bool runtime_object(const char* path) {
  for (const char* r : {"/libc.so", "/libc-", "/libstdc++", "/libgcc_s", "/ld-linux", "/libm.so", "/libpthread"})
    if (std::strstr(path, r)) return true;
  return false;
}

Owner owner_of(void* pc) {
  Dl_info info{};
  void* extra = nullptr;
  if (!::dladdr1(pc, &info, &extra, RTLD_DL_SYMENT)) return Owner::kOther;
  if (info.dli_fbase == own_base()) {
    // touchstone's functions are not exported from the executable; the
    // sanitizer runtime's interceptors (memcpy, malloc, …) are.
    if (!info.dli_sname || !extra) return Owner::kOwn;
    const auto* sym = static_cast<const ElfW(Sym)*>(extra);
    const auto start = reinterpret_cast<uintptr_t>(info.dli_saddr);
    const auto p = reinterpret_cast<uintptr_t>(pc);
    return p >= start && p < start + sym->st_size ? Owner::kRuntime : Owner::kOwn;
  }
  if (!info.dli_fname) return Owner::kOther;
  if (std::strstr(info.dli_fname, "libhdf5")) return Owner::kLibrary;
  return runtime_object(info.dli_fname) ? Owner::kRuntime : Owner::kOther;
}

}  // namespace

std::vector<void*> report_stack(const char* report) {
  std::vector<void*> pcs;
  std::istringstream lines(report ? report : "");
  std::string line;
  while (std::getline(lines, line)) {
    // "    #12 0x7f01… in …": a '#', digits, " 0x".
    size_t at = line.find_first_not_of(' ');
    bool frame = at != std::string::npos && line[at] == '#';
    if (frame) {
      const size_t digits = ++at;
      while (at < line.size() && line[at] >= '0' && line[at] <= '9') ++at;
      frame = at > digits && line.compare(at, 3, " 0x") == 0;
    }
    if (!frame) {
      if (!pcs.empty()) break;  // the stacks after the first say who allocated or freed
      continue;
    }
    pcs.push_back(reinterpret_cast<void*>(std::strtoull(line.c_str() + at + 1, nullptr, 16)));
  }
  return pcs;
}

bool library_fault(void* const* pcs, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    switch (owner_of(pcs[i])) {
      case Owner::kLibrary: return true;
      case Owner::kOwn: return false;
      case Owner::kRuntime:
      case Owner::kOther: break;
    }
  }
  return false;
}

}  // namespace ts::fuzz
