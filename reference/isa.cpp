#include "reference/isa.hpp"

namespace ts {

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::sse2: return "sse2";
    case Isa::avx2: return "avx2";
  }
  return "?";
}

std::vector<Isa> isas_available() {
  std::vector<Isa> out{Isa::sse2};
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2")) out.push_back(Isa::avx2);
#endif
  return out;
}

Isa best_isa() {
  static const Isa best = isas_available().back();
  return best;
}

}  // namespace ts
