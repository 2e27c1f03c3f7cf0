#include "gates/storage_check.hpp"

#include "core/error.hpp"
#include "core/tensor.hpp"
#include "gates/metrics.hpp"

namespace ts {
namespace {

std::optional<DType> storage_of(const Figures& f, const char* key) {
  const auto it = f.find(key);
  if (it == f.end() || !it->second) return std::nullopt;
  const int code = static_cast<int>(*it->second);
  if (code < static_cast<int>(DType::bf16) || code > static_cast<int>(DType::i64)) return std::nullopt;
  return static_cast<DType>(code);
}

}  // namespace

bool is_bit_exact_rule(const GateRule& r) {
  return (r.metric == "ulp_max" && r.max && *r.max == 0) ||
         (r.metric == "identical_fraction" && r.min && *r.min == 1);
}

void check_bit_exact_storage(const GateFile& gate, const Evidence& ev) {
  for (const auto& r : gate.rules) {
    if (!is_bit_exact_rule(r)) continue;
    const auto& by_tensor = r.against == "exact" ? ev.vs_exact : ev.vs_baseline;
    const std::string& tensor = gate.tensor_of(r);
    for (const auto& [name, figs] : by_tensor) {
      // A rule on "stages" applies to every stage's figures.
      if (name != tensor && tensor != "stages") continue;
      const auto a = storage_of(figs, kStorageFigure), b = storage_of(figs, kStorageRefFigure);
      if (!a || !b || *a == *b) continue;
      const std::string against = r.against == "exact" ? "exact" : "baseline";
      throw InputError(gate.source + ": rule '" + r.id + "' (" + r.metric + " vs " + against + " " +
                       r.bound_text() + ") claims bit-exactness, but on " + name + " the candidate '" +
                       ev.candidate + "' is stored as " + dtype_name(*a) + " and the " + against + " as " +
                       dtype_name(*b) + ": bits compare only within one storage type (store both in one "
                       "type, or judge with a tolerance, e.g. sage_compat)");
    }
  }
}

}  // namespace ts
