#include "reference/attention_exact.hpp"

#include <Eigen/Dense>
#include <algorithm>
#include <limits>
#include <vector>

#include "core/error.hpp"
#include "core/progress.hpp"
#include "reference/exact_tiles.hpp"
#include "reference/numerics/detmath.hpp"

namespace ts {
namespace {

template <typename T>
using RowMat = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using StridedRows = Eigen::Map<const RowMat<double>, 0, Eigen::OuterStride<>>;

// One (head, query block) task of the float32 mode: float32 scores and P·V
// products inside a key block (Eigen's order); the running max, the
// denominator and the output accumulator are float64. The float64 mode runs
// exact_tiles, whose summation order is fixed in the source.
template <typename Scalar>
void attend_block(const AttentionProblem& p, int64_t h, int64_t q0, int64_t nq, int64_t block_k,
                  double* out) {
  const int64_t S = p.q.S, D = p.q.D;
  const Eigen::OuterStride<> stride(p.q.sS);
  const StridedRows Q(p.q.row(q0, h), nq, D, Eigen::OuterStride<>(p.q.sS));
  const StridedRows K(p.k.row(0, h), S, D, Eigen::OuterStride<>(p.k.sS));
  const StridedRows V(p.v.row(0, h), S, D, Eigen::OuterStride<>(p.v.sS));
  (void)stride;

  const RowMat<Scalar> Qs = Q.template cast<Scalar>();
  RowMat<Scalar> scores(nq, block_k);
  RowMat<Scalar> probs(nq, block_k);
  RowMat<double> acc = RowMat<double>::Zero(nq, D);
  std::vector<double> m(static_cast<size_t>(nq), -std::numeric_limits<double>::infinity());
  std::vector<double> l(static_cast<size_t>(nq), 0.0);
  const double scale = p.softmax_scale;

  for (int64_t k0 = 0; k0 < S; k0 += block_k) {
    const int64_t nk = std::min(block_k, S - k0);
    auto sc = scores.leftCols(nk);
    sc.noalias() = Qs * K.middleRows(k0, nk).template cast<Scalar>().transpose();
    auto pr = probs.leftCols(nk);
    for (int64_t i = 0; i < nq; ++i) {
      double row_max = -std::numeric_limits<double>::infinity();
      for (int64_t j = 0; j < nk; ++j)
        row_max = std::max(row_max, static_cast<double>(sc(i, j)) * scale);
      const double m_new = std::max(m[i], row_max);
      const double corr = detmath::exp(m[i] - m_new);  // exp(-inf) = 0 on the first block
      double row_sum = 0.0;
      for (int64_t j = 0; j < nk; ++j) {
        const double e = detmath::exp(static_cast<double>(sc(i, j)) * scale - m_new);
        pr(i, j) = static_cast<Scalar>(e);
        row_sum += e;
      }
      l[i] = l[i] * corr + row_sum;
      m[i] = m_new;
      acc.row(i) *= corr;
    }
    if constexpr (std::is_same_v<Scalar, double>) {
      acc.noalias() += pr * V.middleRows(k0, nk);
    } else {
      acc += (pr * V.middleRows(k0, nk).template cast<Scalar>()).template cast<double>();
    }
  }
  for (int64_t i = 0; i < nq; ++i) {
    double* o = out + ((q0 + i) * p.q.H + h) * D;
    for (int64_t d = 0; d < D; ++d) o[d] = acc(i, d) / l[i];
  }
}

class ExactBackend final : public AttentionBackend {
 public:
  explicit ExactBackend(ExactOptions o) : opts_(o) {}
  std::string name() const override {
    return opts_.precision == ExactPrecision::fp64 ? "exact" : "exact_fp32";
  }
  nlohmann::json params() const override {
    return {{"backend", "exact"},
            {"precision", opts_.precision == ExactPrecision::fp64 ? "fp64" : "fp32"},
            {"block_q", opts_.block_q},
            {"block_k", opts_.block_k}};
  }
  AttentionResult run(const AttentionProblem& p) override { return attention_exact(p, opts_); }

 private:
  ExactOptions opts_;
};

}  // namespace

AttentionResult attention_exact(const AttentionProblem& p, const ExactOptions& opts) {
  p.validate();
  if (opts.block_q <= 0 || opts.block_k <= 0)
    throw InputError("exact attention: block sizes must be > 0");
  const int64_t S = p.q.S, H = p.q.H, D = p.q.D;
  AttentionResult r;
  r.out = Tensor({S, H, D}, DType::f64);
  const int64_t nqb = (S + opts.block_q - 1) / opts.block_q;
  const int64_t tasks = H * nqb;
  Progress progress("exact attention", tasks);
  double* out = r.out.ptr();
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t t = 0; t < tasks; ++t) {
    const int64_t h = t % H, qb = t / H;
    const int64_t q0 = qb * opts.block_q, nq = std::min(opts.block_q, S - q0);
    if (opts.precision == ExactPrecision::fp64) {
      exact_tiles::Task task;
      task.q = p.q.row(q0, h);
      task.k = p.k.row(0, h);
      task.v = p.v.row(0, h);
      task.ld_q = p.q.sS;
      task.ld_k = p.k.sS;
      task.ld_v = p.v.sS;
      task.nq = nq;
      task.S = S;
      task.D = D;
      task.block_k = opts.block_k;
      task.scale = p.softmax_scale;
      task.out = out + (q0 * H + h) * D;
      task.ld_out = H * D;
      exact_tiles::attend(task);
    } else {
      attend_block<float>(p, h, q0, nq, opts.block_k, out);
    }
    progress.advance();
  }
  return r;
}

std::unique_ptr<AttentionBackend> make_exact_backend(BackendParams& params) {
  ExactOptions o;
  const std::string prec = params.get_choice("precision", "fp64", {"fp64", "fp32"});
  o.precision = prec == "fp64" ? ExactPrecision::fp64 : ExactPrecision::fp32;
  o.block_q = params.get_int("block_q", o.block_q);
  o.block_k = params.get_int("block_k", o.block_k);
  params.finish();
  if (o.block_q <= 0 || o.block_k <= 0) throw InputError("exact: block sizes must be > 0");
  return std::make_unique<ExactBackend>(o);
}

}  // namespace ts
