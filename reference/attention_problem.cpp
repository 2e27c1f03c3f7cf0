#include "reference/attention_problem.hpp"

#include "core/error.hpp"

namespace ts {

void AttentionProblem::validate() const {
  auto same = [](const BSHDView& a, const BSHDView& b) {
    return a.S == b.S && a.H == b.H && a.D == b.D;
  };
  const bool values = q.p && k.p && v.p, stored = q_stored && k_stored && v_stored;
  if (!values && !(stored && !q.p && !k.p && !v.p))
    throw InputError("attention problem: q, k and v must all be given");
  if (!same(q, k) || !same(q, v))
    throw InputError("attention problem: q, k, v shapes differ");
  int64_t S = 0;
  for (const auto& s : segments) S += s.length;
  if (S != q.S)
    throw InputError("attention problem: segments cover " + std::to_string(S) +
                     " tokens but q has " + std::to_string(q.S));
  if (!(softmax_scale > 0)) throw InputError("attention problem: softmax_scale must be > 0");
}

AttentionProblem make_attention_problem(const Tensor& q, const Tensor& k, const Tensor& v,
                                        const BlockConfig& config) {
  AttentionProblem p;
  p.q = BSHDView::of(q);
  p.k = BSHDView::of(k);
  p.v = BSHDView::of(v);
  p.input_dtype = q.dtype;
  p.segments = config.segments;
  p.softmax_scale = config.softmax_scale;
  p.config = config;
  p.validate();
  return p;
}

AttentionProblem make_stored_attention_problem(const StoredTensor& q, const StoredTensor& k, const StoredTensor& v,
                                               DType input_dtype, const BlockConfig& config) {
  auto view = [](const StoredTensor& t, const char* name) {
    if (t.rank() != 3)
      throw InputError(std::string("attention problem: ") + name + " must be [S, H, D], got rank " +
                       std::to_string(t.rank()));
    BSHDView b;
    b.S = t.dim(0);
    b.H = t.dim(1);
    b.D = t.dim(2);
    b.sS = b.H * b.D;
    b.sH = b.D;
    return b;
  };
  AttentionProblem p;
  p.q = view(q, "q");
  p.k = view(k, "k");
  p.v = view(v, "v");
  p.q_stored = &q;
  p.k_stored = &k;
  p.v_stored = &v;
  p.input_dtype = input_dtype;
  p.segments = config.segments;
  p.softmax_scale = config.softmax_scale;
  p.config = config;
  p.validate();
  return p;
}

}  // namespace ts
