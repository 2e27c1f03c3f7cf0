// The metric passes: each reads the two tensors once. Four independent
// stretches (chunks, or query blocks) advance side by side in the lanes of a
// vector, each lane adding its own elements in index order with the scalar
// code's IEEE operations (-ffp-contract=off: no FMA), so the sums are the
// scalar pass's bits; what is left over runs the scalar Sums::add. Counts and
// maxima do not depend on order: they are gathered per row and added once.
#include <omp.h>

#include <algorithm>
#include <memory>
#include <vector>

#include "gates/metric_sums.hpp"

#pragma GCC diagnostic ignored "-Wpsabi"

namespace ts::metric_detail {
namespace {

typedef double V __attribute__((vector_size(32)));
typedef long long VI __attribute__((vector_size(32)));
typedef float VF __attribute__((vector_size(16)));
constexpr int W = 4;

#define TS_LANE [[gnu::always_inline]] inline

template <class To, class From>
TS_LANE To bits(const From& x) {
  static_assert(sizeof(To) == sizeof(From));
  To out;
  std::memcpy(&out, &x, sizeof out);
  return out;
}

// How ulp distances are counted: vector code for the 16- and 32-bit float
// types, the scalar function lane by lane for float64 and integer codes.
enum class UlpKind { bf16, f16, f32, scalar };

UlpKind ulp_kind(DType storage) {
  switch (storage) {
    case DType::bf16: return UlpKind::bf16;
    case DType::f16: return UlpKind::f16;
    case DType::f32: return UlpKind::f32;
    default: return UlpKind::scalar;
  }
}

// 0 <= u < 2^52 as doubles, exactly (no int64 -> double vector instruction below AVX-512).
TS_LANE V small_to_double(VI u) {
  const VI magic = {0x4330000000000000ll, 0x4330000000000000ll, 0x4330000000000000ll, 0x4330000000000000ll};
  const V two52 = {0x1p52, 0x1p52, 0x1p52, 0x1p52};
  return bits<V>(u + magic) - two52;
}

template <int mant, int ebits>
TS_LANE VI ordered_small_v(V x) {
  constexpr int bias = (1 << (ebits - 1)) - 1;
  constexpr long long inf = ((1ll << ebits) - 1) << mant;
  constexpr int s = 52 - mant;
  const VI xi = bits<VI>(x);
  const VI ax = xi & 0x7fffffffffffffffll;
  const VI normal = (ax >> 52) >= (1023 + 1 - bias);
  VI field = ((ax + ((1ll << (s - 1)) - 1) + ((ax >> s) & 1)) >> s) - ((1023ll - bias) << mant);
  const VI infv = {inf, inf, inf, inf};
  field = field >= infv ? infv : field;
  const VI tiny = ~normal & (ax != 0);
  if (tiny[0] | tiny[1] | tiny[2] | tiny[3]) {
    for (int k = 0; k < W; ++k)
      if (tiny[k]) field[k] = rounded_magnitude<mant, ebits>(x[k]);
  }
  field = normal ? field : ((ax == 0) ? VI{} : field);
  return xi < 0 ? -field : field;
}

TS_LANE VI ordered_f32_v(V x) {
  const VF f = __builtin_convertvector(x, VF);
  typedef unsigned VU __attribute__((vector_size(16)));
  const VU u = bits<VU>(f);
  const VI mag = __builtin_convertvector(u & 0x7fffffffu, VI);
  const VI neg = __builtin_convertvector(u >> 31, VI);
  return neg != 0 ? -mag : mag;
}

// The ulp distance of each lane; fin: both finite (-1) or not (0).
template <UlpKind K>
TS_LANE V ulp_v(V x, V y, VI fin, DType storage) {
  V u;
  if constexpr (K == UlpKind::scalar) {
    for (int k = 0; k < W; ++k) u[k] = any_ulp_distance(x[k], y[k], storage);
    return u;
  } else {
    VI d;
    if constexpr (K == UlpKind::bf16) d = ordered_small_v<7, 8>(x) - ordered_small_v<7, 8>(y);
    else if constexpr (K == UlpKind::f16) d = ordered_small_v<10, 5>(x) - ordered_small_v<10, 5>(y);
    else d = ordered_f32_v(x) - ordered_f32_v(y);
    u = small_to_double(d < 0 ? -d : d);
    // Not both finite: 0 for the same infinity, else infinite.
    const VI xi = bits<VI>(x);
    const VI same_inf = ((xi & 0x7fffffffffffffffll) == 0x7ff0000000000000ll) & (x == y);
    const V inf = {__builtin_inf(), __builtin_inf(), __builtin_inf(), __builtin_inf()};
    return fin ? u : (same_inf ? V{} : inf);
  }
}

TS_LANE VI finite_v(V x) { return ((bits<VI>(x) >> 52) & 0x7ff) != 0x7ff; }
TS_LANE V abs_v(V x) { return bits<V>(bits<VI>(x) & 0x7fffffffffffffffll); }

// One lane per stretch: the order-dependent sums.
struct VSums {
  V d2{}, a2{}, b2{}, ab{}, absd{}, absb{};
};
// The order-free figures of one row of every lane.
struct VRow {
  VI nfa{}, nfb{}, za{}, zb{}, ident{};
  V maxd{}, umax{};
};

struct Element {
  V dd, xx, yy, xy, ad, ay;
};

template <UlpKind K>
TS_LANE Element element(V x, V y, VRow& row, DType storage) {
  const VI fx = finite_v(x), fy = finite_v(y);
  row.nfa -= ~fx;  // masks are -1
  row.nfb -= ~fy;
  row.za -= (x == 0.0);
  row.zb -= (y == 0.0);
  const V d = x - y;
  Element e{d * d, x * x, y * y, x * y, abs_v(d), abs_v(y)};
  const VI take = (e.ad != e.ad) | (e.ad > row.maxd);
  row.maxd = take ? e.ad : row.maxd;
  const V u = ulp_v<K>(x, y, fx & fy, storage);
  row.umax = u > row.umax ? u : row.umax;
  row.ident -= (u == 0.0);
  return e;
}

TS_LANE void add(VSums& s, const Element& e) {
  s.d2 += e.dd;
  s.a2 += e.xx;
  s.b2 += e.yy;
  s.ab += e.xy;
  s.absd += e.ad;
  s.absb += e.ay;
}

void load_lane(const Sums& from, VSums& v, int k) {
  v.d2[k] = from.d2;
  v.a2[k] = from.a2;
  v.b2[k] = from.b2;
  v.ab[k] = from.ab;
  v.absd[k] = from.absd;
  v.absb[k] = from.absb;
}
void store_lane(const VSums& v, int k, Sums& to) {
  to.d2 = v.d2[k];
  to.a2 = v.a2[k];
  to.b2 = v.b2[k];
  to.ab = v.ab[k];
  to.absd = v.absd[k];
  to.absb = v.absb[k];
}
void add_row(const VRow& r, int k, int64_t n, Sums& to) {
  to.n += n;
  to.nonfinite_a += r.nfa[k];
  to.nonfinite_b += r.nfb[k];
  to.zeros_a += r.za[k];
  to.zeros_b += r.zb[k];
  to.identical += r.ident[k];
  max_into(to.max_absd, r.maxd[k]);
  if (r.umax[k] > to.ulp_max) to.ulp_max = r.umax[k];
}

// Lane k of element j at p[4 j + k] (TensorRef::fill with stride W).
TS_LANE V lanes_at(const double* p, int64_t j) {
  V v;
  std::memcpy(&v, p + W * j, sizeof v);
  return v;
}

// Elements per lane that a chunk group converts at a time: a stored
// operand's tiles stay in the core's cache.
constexpr int64_t kTile = 2048;

// W whole chunks starting at chunk c0, side by side; scratch: 2 W kTile doubles,
// each operand's W stretches interleaved.
template <UlpKind K>
TS_LANE void chunk_group_body(const TensorRef& a, const TensorRef& b, int64_t c0, DType storage, Sums* chunks,
                              double* scratch) {
  VSums s;
  VRow row;
  double* ta = scratch;
  double* tb = scratch + W * kTile;
  for (int64_t t0 = 0; t0 < kChunk; t0 += kTile) {
    for (int k = 0; k < W; ++k) {
      a.fill((c0 + k) * kChunk + t0, kTile, ta + k, W);
      b.fill((c0 + k) * kChunk + t0, kTile, tb + k, W);
    }
    for (int64_t j = 0; j < kTile; ++j) add(s, element<K>(lanes_at(ta, j), lanes_at(tb, j), row, storage));
  }
  for (int k = 0; k < W; ++k) {
    Sums& out = chunks[c0 + k];
    out = Sums{};
    store_lane(s, k, out);
    add_row(row, k, kChunk, out);
  }
}

// Plain functions, not templates, carry the instruction set: GCC 12 did not
// realign the stack for 32-byte vectors in a function template with a target
// attribute (a misaligned spill crashed).
using ChunkGroup = void (*)(const TensorRef&, const TensorRef&, int64_t, DType, Sums*, double*);
#define TS_CHUNK_GROUP(K, name, target)                                                                    \
  target void name(const TensorRef& a, const TensorRef& b, int64_t c0, DType storage, Sums* chunks, double* scratch) { \
    chunk_group_body<UlpKind::K>(a, b, c0, storage, chunks, scratch);                                         \
  }
#define TS_AVX2 [[gnu::target("avx2")]]
#define TS_SSE2
TS_CHUNK_GROUP(bf16, chunk_bf16_avx2, TS_AVX2)
TS_CHUNK_GROUP(f16, chunk_f16_avx2, TS_AVX2)
TS_CHUNK_GROUP(f32, chunk_f32_avx2, TS_AVX2)
TS_CHUNK_GROUP(scalar, chunk_scalar_avx2, TS_AVX2)
TS_CHUNK_GROUP(bf16, chunk_bf16_sse2, TS_SSE2)
TS_CHUNK_GROUP(f16, chunk_f16_sse2, TS_SSE2)
TS_CHUNK_GROUP(f32, chunk_f32_sse2, TS_SSE2)
TS_CHUNK_GROUP(scalar, chunk_scalar_sse2, TS_SSE2)
#undef TS_CHUNK_GROUP

bool has_avx2() {
  if (scalar_lanes_only()) return false;
  static const bool yes = [] {
#if defined(__x86_64__)
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") != 0;
#else
    return false;
#endif
  }();
  return yes;
}

template <UlpKind K>
void chunk_sums_of(const TensorRef& a, const TensorRef& b, int64_t n, DType storage, Sums* chunks) {
  const int64_t count = (n + kChunk - 1) / kChunk;
  const int64_t groups = n / kChunk / W;
  const ChunkGroup avx2[] = {chunk_bf16_avx2, chunk_f16_avx2, chunk_f32_avx2, chunk_scalar_avx2};
  const ChunkGroup sse2[] = {chunk_bf16_sse2, chunk_f16_sse2, chunk_f32_sse2, chunk_scalar_sse2};
  const ChunkGroup group = (has_avx2() ? avx2 : sse2)[static_cast<int>(K)];
#pragma omp parallel
  {
    const std::unique_ptr<double[]> scratch(new double[static_cast<size_t>(std::max<int64_t>(2 * W * kTile, 2 * kChunk))]);
#pragma omp for schedule(static)
    for (int64_t g = 0; g < groups; ++g) group(a, b, g * W, storage, chunks, scratch.get());
#pragma omp for schedule(static)
    for (int64_t c = groups * W; c < count; ++c) {
      Sums& s = chunks[c];
      s = Sums{};
      const int64_t first = c * kChunk, len = std::min(n, (c + 1) * kChunk) - first;
      const double* pa = a.values(first, len, scratch.get());
      const double* pb = b.values(first, len, scratch.get() + kChunk);
      for (int64_t i = 0; i < len; ++i) s.add(pa[i], pb[i], storage);
    }
  }
}

struct Shape {
  int64_t S, H, D, frames;
  int64_t block_elems() const { return kQueryBlock * H * D; }
};

// W whole query blocks starting at block q0, side by side: every lane's
// head, frame and (with chunks) stretch sums in its own index order.
// scratch: 2 W H D doubles (one token row of each lane's block, both operands).
template <UlpKind K>
TS_LANE void block_group_body(const TensorRef& a, const TensorRef& b, const Shape& sh, int64_t q0,
                              const int64_t* frame_of, DType storage, Sums* head_sums, Sums* frame_sums,
                              Sums* chunks, VSums* heads, double* scratch) {
  const int64_t H = sh.H, D = sh.D, slots = sh.frames + 1, row_elems = H * D;
  int64_t base[W];
  for (int k = 0; k < W; ++k) base[k] = (q0 + k) * sh.block_elems();
  std::fill(heads, heads + sh.H, VSums{});
  VSums frame, chunk;
  int64_t cur[W] = {-1, -1, -1, -1};
  for (int64_t sr = 0; sr < kQueryBlock; ++sr) {
    for (int k = 0; k < W; ++k) {
      const int64_t f = frame_of[(q0 + k) * kQueryBlock + sr];
      if (f == cur[k]) continue;
      if (cur[k] >= 0) store_lane(frame, k, frame_sums[(q0 + k) * slots + cur[k]]);
      load_lane(frame_sums[(q0 + k) * slots + f], frame, k);
      cur[k] = f;
    }
    double* ra = scratch;
    double* rb = scratch + W * row_elems;
    for (int k = 0; k < W; ++k) {
      a.fill(base[k] + sr * row_elems, row_elems, ra + k, W);
      b.fill(base[k] + sr * row_elems, row_elems, rb + k, W);
    }
    for (int64_t h = 0; h < H; ++h) {
      const int64_t j0 = (sr * H + h) * D;
      if (chunks && j0 > 0 && j0 % kChunk == 0) {
        for (int k = 0; k < W; ++k) store_lane(chunk, k, chunks[(base[k] + j0) / kChunk - 1]);
        chunk = VSums{};
      }
      VSums& head = heads[static_cast<size_t>(h)];
      VRow row;
      for (int64_t d = 0; d < D; ++d) {
        const Element e = element<K>(lanes_at(ra, h * D + d), lanes_at(rb, h * D + d), row, storage);
        add(head, e);
        add(frame, e);
        if (chunks) add(chunk, e);
      }
      for (int k = 0; k < W; ++k) {
        add_row(row, k, D, head_sums[(q0 + k) * H + h]);
        add_row(row, k, D, frame_sums[(q0 + k) * slots + cur[k]]);
        if (chunks) add_row(row, k, D, chunks[(base[k] + j0) / kChunk]);
      }
    }
  }
  for (int k = 0; k < W; ++k) {
    store_lane(frame, k, frame_sums[(q0 + k) * slots + cur[k]]);
    if (chunks) store_lane(chunk, k, chunks[(base[k] + sh.block_elems()) / kChunk - 1]);
    for (int64_t h = 0; h < H; ++h) store_lane(heads[static_cast<size_t>(h)], k, head_sums[(q0 + k) * H + h]);
  }
}

#define TS_BLOCK_GROUP_ARGS                                                                                 \
  const TensorRef &a, const TensorRef &b, const Shape &sh, int64_t q0, const int64_t *frame_of, DType storage, \
      Sums *head_sums, Sums *frame_sums, Sums *chunks, VSums *heads, double *scratch
using BlockGroup = void (*)(TS_BLOCK_GROUP_ARGS);
#define TS_BLOCK_GROUP(K, name, target)                                                      \
  target void name(TS_BLOCK_GROUP_ARGS) {                                                    \
    block_group_body<UlpKind::K>(a, b, sh, q0, frame_of, storage, head_sums, frame_sums, chunks, heads, scratch); \
  }
TS_BLOCK_GROUP(bf16, block_bf16_avx2, TS_AVX2)
TS_BLOCK_GROUP(f16, block_f16_avx2, TS_AVX2)
TS_BLOCK_GROUP(f32, block_f32_avx2, TS_AVX2)
TS_BLOCK_GROUP(scalar, block_scalar_avx2, TS_AVX2)
TS_BLOCK_GROUP(bf16, block_bf16_sse2, TS_SSE2)
TS_BLOCK_GROUP(f16, block_f16_sse2, TS_SSE2)
TS_BLOCK_GROUP(f32, block_f32_sse2, TS_SSE2)
TS_BLOCK_GROUP(scalar, block_scalar_sse2, TS_SSE2)
#undef TS_BLOCK_GROUP
#undef TS_BLOCK_GROUP_ARGS

template <UlpKind K>
void breakdown_sums_of(const TensorRef& a, const TensorRef& b, const Shape& sh, const int64_t* frame_of,
                       DType storage, Sums* head_sums, Sums* frame_sums, Sums* chunks) {
  const int64_t H = sh.H, D = sh.D, slots = sh.frames + 1, row_elems = H * D;
  const int64_t blocks = (sh.S + kQueryBlock - 1) / kQueryBlock;
  const int64_t groups = sh.S / kQueryBlock / W;
  const BlockGroup avx2[] = {block_bf16_avx2, block_f16_avx2, block_f32_avx2, block_scalar_avx2};
  const BlockGroup sse2[] = {block_bf16_sse2, block_f16_sse2, block_f32_sse2, block_scalar_sse2};
  const BlockGroup group = (has_avx2() ? avx2 : sse2)[static_cast<int>(K)];
#pragma omp parallel
  {
    // A new-expression takes the vectors' 32-byte alignment; std::vector's allocator did not here.
    const std::unique_ptr<VSums[]> heads(new VSums[static_cast<size_t>(H)]);
    const std::unique_ptr<double[]> scratch(new double[static_cast<size_t>(2 * W * row_elems)]);
#pragma omp for schedule(static)
    for (int64_t g = 0; g < groups; ++g)
      group(a, b, sh, g * W, frame_of, storage, head_sums, frame_sums, chunks, heads.get(), scratch.get());
#pragma omp for schedule(static)
    for (int64_t blk = groups * W; blk < blocks; ++blk) {
      const int64_t end = std::min(sh.S, (blk + 1) * kQueryBlock);
      for (int64_t s = blk * kQueryBlock; s < end; ++s) {
        Sums& fa = frame_sums[blk * slots + frame_of[s]];
        const double* ra = a.values(s * row_elems, row_elems, scratch.get());
        const double* rb = b.values(s * row_elems, row_elems, scratch.get() + row_elems);
        for (int64_t h = 0; h < H; ++h) {
          Sums& ha = head_sums[blk * H + h];
          const int64_t base = (s * H + h) * D;
          for (int64_t d = 0; d < D; ++d) {
            const double x = ra[h * D + d], y = rb[h * D + d];
            ha.add(x, y, storage);
            fa.add(x, y, storage);
            if (chunks) chunks[(base + d) / kChunk].add(x, y, storage);
          }
        }
      }
    }
  }
}

}  // namespace

bool& scalar_lanes_only() {
  static bool only = false;
  return only;
}

void chunk_sums(TensorRef a, TensorRef b, int64_t n, DType storage, Sums* chunks) {
  switch (ulp_kind(storage)) {
    case UlpKind::bf16: return chunk_sums_of<UlpKind::bf16>(a, b, n, storage, chunks);
    case UlpKind::f16: return chunk_sums_of<UlpKind::f16>(a, b, n, storage, chunks);
    case UlpKind::f32: return chunk_sums_of<UlpKind::f32>(a, b, n, storage, chunks);
    case UlpKind::scalar: return chunk_sums_of<UlpKind::scalar>(a, b, n, storage, chunks);
  }
}

bool breakdown_covers_chunks(int64_t H, int64_t D) {
  return D > 0 && H > 0 && (kQueryBlock * H * D) % kChunk == 0 && kChunk % D == 0;
}

void breakdown_sums(TensorRef a, TensorRef b, int64_t S, int64_t H, int64_t D, const int64_t* frame_of,
                    int64_t frames, DType storage, Sums* head_sums, Sums* frame_sums, Sums* chunks) {
  if (chunks && !breakdown_covers_chunks(H, D)) chunks = nullptr;
  const Shape sh{S, H, D, frames};
  switch (ulp_kind(storage)) {
    case UlpKind::bf16: return breakdown_sums_of<UlpKind::bf16>(a, b, sh, frame_of, storage, head_sums, frame_sums, chunks);
    case UlpKind::f16: return breakdown_sums_of<UlpKind::f16>(a, b, sh, frame_of, storage, head_sums, frame_sums, chunks);
    case UlpKind::f32: return breakdown_sums_of<UlpKind::f32>(a, b, sh, frame_of, storage, head_sums, frame_sums, chunks);
    case UlpKind::scalar: return breakdown_sums_of<UlpKind::scalar>(a, b, sh, frame_of, storage, head_sums, frame_sums, chunks);
  }
}

}  // namespace ts::metric_detail
