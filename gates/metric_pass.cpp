// The metric passes: each reads the two tensors once. Four independent
// stretches (chunks, or query blocks) advance side by side in the lanes of a
// vector, each lane adding its own elements in index order with the scalar
// code's IEEE operations (-ffp-contract=off: no FMA), so the sums are the
// scalar pass's bits; what is left over runs the scalar Sums::add. Counts and
// maxima do not depend on order: they are gathered per row and added once.
#include <omp.h>

#include <algorithm>
#include <cstdlib>
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
// A lambda is a function of the default instruction set: one left out of line
// in an AVX-512 or AVX2 pass would receive its vectors by another ABI (GCC 13
// did, and the pass crashed). Every lambda here is inlined.
#define TS_LAMBDA __attribute__((always_inline))

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

// u where both are finite (fin -1); else 0 for the same infinity, infinite otherwise.
TS_LANE V unless_nonfinite(V x, V y, VI fin, V u) {
  const VI xi = bits<VI>(x);
  const VI same_inf = ((xi & 0x7fffffffffffffffll) == 0x7ff0000000000000ll) & (x == y);
  const V inf = {__builtin_inf(), __builtin_inf(), __builtin_inf(), __builtin_inf()};
  return fin ? u : (same_inf ? V{} : inf);
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
    return unless_nonfinite(x, y, fin, small_to_double(d < 0 ? -d : d));
  }
}

TS_LANE VI finite_v(V x) { return ((bits<VI>(x) >> 52) & 0x7ff) != 0x7ff; }
TS_LANE V abs_v(V x) { return bits<V>(bits<VI>(x) & 0x7fffffffffffffffll); }

// One lane per stretch: the order-dependent sums.
struct VSums {
  V d2{}, a2{}, b2{}, ab{}, absd{}, absb{};
};
typedef unsigned short VH16 __attribute__((vector_size(32)));
typedef unsigned short VH4 __attribute__((vector_size(8)));
typedef int VI4 __attribute__((vector_size(16)));
typedef unsigned VU4 __attribute__((vector_size(16)));
typedef short VS16 __attribute__((vector_size(32)));

// The order-free figures of one row of every lane. The *16 members count the
// bfloat16 passes' all-finite quads in 16-bit lanes as the 4 x 4 transpose
// leaves them (lane 4 j + k: stretch k), folded into lane k by add_row (a row
// holds at most kChunk / 4 elements of a lane per 16-bit lane: no overflow).
struct VRow {
  VI nfa{}, nfb{}, za{}, zb{}, ident{};
  V maxd{}, umax{};
  VH16 za16{}, zb16{}, ident16{}, umax16{};
};

struct Element {
  V dd, xx, yy, xy, ad, ay;
};

// ulp(fx, fy): each lane's ulp distance, given which operands are finite.
template <class Ulp>
TS_LANE Element element_with(V x, V y, VRow& row, Ulp ulp) {
  const VI fx = finite_v(x), fy = finite_v(y);
  row.nfa -= ~fx;  // masks are -1
  row.nfb -= ~fy;
  row.za -= (x == 0.0);
  row.zb -= (y == 0.0);
  const V d = x - y;
  Element e{d * d, x * x, y * y, x * y, abs_v(d), abs_v(y)};
  const VI take = (e.ad != e.ad) | (e.ad > row.maxd);
  row.maxd = take ? e.ad : row.maxd;
  const V u = ulp(fx & fy);
  row.umax = u > row.umax ? u : row.umax;
  row.ident -= (u == 0.0);
  return e;
}

template <UlpKind K>
TS_LANE Element element(V x, V y, VRow& row, DType storage) {
  return element_with(x, y, row, [&](VI fin) TS_LAMBDA { return ulp_v<K>(x, y, fin, storage); });
}

// Operands stored as bfloat16, read as their bits: the values are the bits
// widened (exact), and the ulp distance of two bfloat16 values is the
// difference of their sign-magnitude codes, which is what rounding each to
// bfloat16 and subtracting gives (rounding a bfloat16 to bfloat16 is itself).

struct Bf16Lanes {
  V value;
  VI4 code;  // sign-magnitude code: -(bits & 0x7fff) where the sign is set
};

TS_LANE Bf16Lanes bf16_lanes(VH4 h) {
  const VU4 w = __builtin_convertvector(h, VU4);
  const VF f = bits<VF>(w << 16);
  const VI4 mag = bits<VI4>(w & 0x7fffu);
  return {__builtin_convertvector(f, V), (w >> 15) != 0 ? -mag : mag};
}

// Elements j0 .. j0 + 3 of each lane's bfloat16 row p[k] as bits: lane
// 4 j + k holds element j0 + j of stretch k (one 4 x 4 transpose).
TS_LANE VH16 bf16_transposed(const unsigned char* const* p, int64_t j0) {
  // Built in registers: four 8-byte stores read back as one 32-byte load stall the core.
  uint64_t q[W];
  for (int k = 0; k < W; ++k) std::memcpy(&q[k], p[k] + 2 * j0, 8);
  const VI m4 = {static_cast<long long>(q[0]), static_cast<long long>(q[1]), static_cast<long long>(q[2]),
                 static_cast<long long>(q[3])};
  const VH16 m = bits<VH16>(m4);
  return __builtin_shufflevector(m, m, 0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
}

TS_LANE void bf16_quad(const unsigned char* const* p, int64_t j0, Bf16Lanes* out) {
  const VH16 t = bf16_transposed(p, j0);
  out[0] = bf16_lanes(__builtin_shufflevector(t, t, 0, 1, 2, 3));
  out[1] = bf16_lanes(__builtin_shufflevector(t, t, 4, 5, 6, 7));
  out[2] = bf16_lanes(__builtin_shufflevector(t, t, 8, 9, 10, 11));
  out[3] = bf16_lanes(__builtin_shufflevector(t, t, 12, 13, 14, 15));
}

TS_LANE Element element_bf16(const Bf16Lanes& x, const Bf16Lanes& y, VRow& row) {
  return element_with(x.value, y.value, row, [&](VI fin) TS_LAMBDA {
    VI4 d = x.code - y.code;
    d = d < 0 ? -d : d;
    return unless_nonfinite(x.value, y.value, fin, __builtin_convertvector(d, V));
  });
}

TS_LANE V bf16_value(VH4 h) {
  return __builtin_convertvector(bits<VF>(__builtin_convertvector(h, VU4) << 16), V);
}

// The common quad: all 32 elements finite. Counts, ulp distances and their
// maximum are taken on the 16-bit codes, sixteen at a time; x[j], y[j]: the
// values of element j0 + j of every lane. False (nothing counted) when any
// element is not finite: the caller takes the general path.
TS_LANE bool bf16_finite_quad(const unsigned char* const* pa, const unsigned char* const* pb, int64_t j0,
                              VRow& row, V* x, V* y) {
  const VH16 ta = bf16_transposed(pa, j0), tb = bf16_transposed(pb, j0);
  const VH16 na = (ta & 0x7f80) == 0x7f80, nb = (tb & 0x7f80) == 0x7f80;
  const VI any = bits<VI>(na | nb);
  if (any[0] | any[1] | any[2] | any[3]) return false;
  const VS16 ma = bits<VS16>(ta & 0x7fff), mb = bits<VS16>(tb & 0x7fff);
  const VS16 ca = bits<VS16>(ta) < 0 ? -ma : ma, cb = bits<VS16>(tb) < 0 ? -mb : mb;
  row.za16 -= bits<VH16>(ma == 0);  // masks are -1
  row.zb16 -= bits<VH16>(mb == 0);
  row.ident16 -= bits<VH16>(ca == cb);
  // |ca - cb| <= 2 * 0x7f80 fits 16 unsigned bits.
  const VH16 u = bits<VH16>(ca > cb ? ca : cb) - bits<VH16>(ca > cb ? cb : ca);
  row.umax16 = u > row.umax16 ? u : row.umax16;
  x[0] = bf16_value(__builtin_shufflevector(ta, ta, 0, 1, 2, 3));
  x[1] = bf16_value(__builtin_shufflevector(ta, ta, 4, 5, 6, 7));
  x[2] = bf16_value(__builtin_shufflevector(ta, ta, 8, 9, 10, 11));
  x[3] = bf16_value(__builtin_shufflevector(ta, ta, 12, 13, 14, 15));
  y[0] = bf16_value(__builtin_shufflevector(tb, tb, 0, 1, 2, 3));
  y[1] = bf16_value(__builtin_shufflevector(tb, tb, 4, 5, 6, 7));
  y[2] = bf16_value(__builtin_shufflevector(tb, tb, 8, 9, 10, 11));
  y[3] = bf16_value(__builtin_shufflevector(tb, tb, 12, 13, 14, 15));
  return true;
}

// element_with for finite x and y whose counts and ulps bf16_finite_quad took:
// the sums and the maximum difference (never NaN here).
TS_LANE Element element_finite(V x, V y, VRow& row) {
  const V d = x - y;
  Element e{d * d, x * x, y * y, x * y, abs_v(d), abs_v(y)};
  row.maxd = e.ad > row.maxd ? e.ad : row.maxd;
  return e;
}

// One quad of both operands' bfloat16 rows: fn(element) for j0 .. j0 + 3 in order.
template <class Fn>
TS_LANE void bf16_quad_elements(const unsigned char* const* pa, const unsigned char* const* pb, int64_t j0,
                                VRow& row, Fn fn) {
  V x[4], y[4];
  if (bf16_finite_quad(pa, pb, j0, row, x, y)) {
    for (int q = 0; q < 4; ++q) fn(element_finite(x[q], y[q], row));
    return;
  }
  Bf16Lanes lx[4], ly[4];
  bf16_quad(pa, j0, lx);
  bf16_quad(pb, j0, ly);
  for (int q = 0; q < 4; ++q) fn(element_bf16(lx[q], ly[q], row));
}

// Lane k's elements [first[k], first[k] + n) of both operands as bfloat16
// bits, when K is bfloat16 and both are stored so with those elements in one
// span each (almost always: spans are whole chunks); else false.
template <UlpKind K>
TS_LANE bool bf16_rows(const TensorRef& a, const TensorRef& b, const int64_t* first, int64_t n,
                       const unsigned char** pa, const unsigned char** pb) {
  if constexpr (K != UlpKind::bf16) {
    return false;
  } else {
    if (n % 4 != 0) return false;
    for (int k = 0; k < W; ++k) {
      pa[k] = a.bf16_bytes(first[k], n);
      pb[k] = b.bf16_bytes(first[k], n);
      if (!pa[k] || !pb[k]) return false;
    }
    return true;
  }
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
  for (int j = 0; j < 4; ++j) {
    to.zeros_a += r.za16[4 * j + k];
    to.zeros_b += r.zb16[4 * j + k];
    to.identical += r.ident16[4 * j + k];
    const double u = r.umax16[4 * j + k];
    if (u > to.ulp_max) to.ulp_max = u;
  }
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
    int64_t first[W];
    for (int k = 0; k < W; ++k) first[k] = (c0 + k) * kChunk + t0;
    const unsigned char *pa[W], *pb[W];
    if (bf16_rows<K>(a, b, first, kTile, pa, pb)) {
      for (int64_t j = 0; j < kTile; j += 4) bf16_quad_elements(pa, pb, j, row, [&](const Element& e) TS_LAMBDA { add(s, e); });
      continue;
    }
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
// AVX-512 (at 256 bits, so no clock penalty) brings 32 registers, 64-bit
// shifts and compares into mask registers: the same lanes, about twice as fast.
#define TS_AVX512 [[gnu::target("avx2,avx512f,avx512vl,avx512dq,avx512bw")]]
#define TS_AVX2 [[gnu::target("avx2")]]
#define TS_SSE2
TS_CHUNK_GROUP(bf16, chunk_bf16_avx512, TS_AVX512)
TS_CHUNK_GROUP(f16, chunk_f16_avx512, TS_AVX512)
TS_CHUNK_GROUP(f32, chunk_f32_avx512, TS_AVX512)
TS_CHUNK_GROUP(scalar, chunk_scalar_avx512, TS_AVX512)
TS_CHUNK_GROUP(bf16, chunk_bf16_avx2, TS_AVX2)
TS_CHUNK_GROUP(f16, chunk_f16_avx2, TS_AVX2)
TS_CHUNK_GROUP(f32, chunk_f32_avx2, TS_AVX2)
TS_CHUNK_GROUP(scalar, chunk_scalar_avx2, TS_AVX2)
TS_CHUNK_GROUP(bf16, chunk_bf16_sse2, TS_SSE2)
TS_CHUNK_GROUP(f16, chunk_f16_sse2, TS_SSE2)
TS_CHUNK_GROUP(f32, chunk_f32_sse2, TS_SSE2)
TS_CHUNK_GROUP(scalar, chunk_scalar_sse2, TS_SSE2)
#undef TS_CHUNK_GROUP

// 2: AVX-512 (F, VL, DQ, BW), 1: AVX2, 0: SSE2.
int cpu_lane_isa() {
  static const int level = [] {
#if defined(__x86_64__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
        __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512bw"))
      return 2;
    return __builtin_cpu_supports("avx2") ? 1 : 0;
#else
    return 0;
#endif
  }();
  return level;
}

int lane_isa() { return std::min(cpu_lane_isa(), lane_isa_cap()); }

template <class F>
F pick(const F (&by_isa)[3][4], UlpKind k) {
  return by_isa[lane_isa()][static_cast<int>(k)];
}

ChunkGroup chunk_group_for(UlpKind k) {
  static const ChunkGroup by_isa[3][4] = {
      {chunk_bf16_sse2, chunk_f16_sse2, chunk_f32_sse2, chunk_scalar_sse2},
      {chunk_bf16_avx2, chunk_f16_avx2, chunk_f32_avx2, chunk_scalar_avx2},
      {chunk_bf16_avx512, chunk_f16_avx512, chunk_f32_avx512, chunk_scalar_avx512}};
  return pick(by_isa, k);
}

// The stretches past the last whole group, one element at a time.
void tail_chunk(const TensorRef& a, const TensorRef& b, int64_t n, int64_t c, DType storage, Sums* chunks,
                double* scratch) {
  Sums& s = chunks[c];
  s = Sums{};
  const int64_t first = c * kChunk, len = std::min(n, (c + 1) * kChunk) - first;
  const double* pa = a.values(first, len, scratch);
  const double* pb = b.values(first, len, scratch + kChunk);
  for (int64_t i = 0; i < len; ++i) s.add(pa[i], pb[i], storage);
}

// One pass over a against one reference (c null) or two: per group of W
// stretches, b's sums and then c's, a's group still in cache for the second.
void chunk_sums_of(const TensorRef& a, const TensorRef& b, const TensorRef* c, int64_t n, DType storage_b,
                   DType storage_c, Sums* chunks_b, Sums* chunks_c) {
  const int64_t count = (n + kChunk - 1) / kChunk;
  const int64_t groups = n / kChunk / W;
  const ChunkGroup group_b = chunk_group_for(ulp_kind(storage_b));
  const ChunkGroup group_c = c ? chunk_group_for(ulp_kind(storage_c)) : nullptr;
#pragma omp parallel
  {
    const std::unique_ptr<double[]> scratch(new double[static_cast<size_t>(std::max<int64_t>(2 * W * kTile, 2 * kChunk))]);
#pragma omp for schedule(static)
    for (int64_t g = 0; g < groups; ++g) {
      group_b(a, b, g * W, storage_b, chunks_b, scratch.get());
      if (c) group_c(a, *c, g * W, storage_c, chunks_c, scratch.get());
    }
#pragma omp for schedule(static)
    for (int64_t k = groups * W; k < count; ++k) {
      tail_chunk(a, b, n, k, storage_b, chunks_b, scratch.get());
      if (c) tail_chunk(a, *c, n, k, storage_c, chunks_c, scratch.get());
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
    int64_t first[W];
    for (int k = 0; k < W; ++k) first[k] = base[k] + sr * row_elems;
    const unsigned char *pa[W], *pb[W];
    const bool bits16 = D % 4 == 0 && bf16_rows<K>(a, b, first, row_elems, pa, pb);
    double* ra = scratch;
    double* rb = scratch + W * row_elems;
    if (!bits16) {
      for (int k = 0; k < W; ++k) {
        a.fill(first[k], row_elems, ra + k, W);
        b.fill(first[k], row_elems, rb + k, W);
      }
    }
    for (int64_t h = 0; h < H; ++h) {
      const int64_t j0 = (sr * H + h) * D;
      if (chunks && j0 > 0 && j0 % kChunk == 0) {
        for (int k = 0; k < W; ++k) store_lane(chunk, k, chunks[(base[k] + j0) / kChunk - 1]);
        chunk = VSums{};
      }
      // A local copy: through the reference every add went to memory and back.
      VSums head = heads[static_cast<size_t>(h)];
      VRow row;
      if (bits16) {
        for (int64_t d = 0; d < D; d += 4)
          bf16_quad_elements(pa, pb, h * D + d, row, [&](const Element& e) TS_LAMBDA {
            add(head, e);
            add(frame, e);
            if (chunks) add(chunk, e);
          });
      } else if (chunks) {
        for (int64_t d = 0; d < D; ++d) {
          const Element e = element<K>(lanes_at(ra, h * D + d), lanes_at(rb, h * D + d), row, storage);
          add(head, e);
          add(frame, e);
          add(chunk, e);
        }
      } else {
        for (int64_t d = 0; d < D; ++d) {
          const Element e = element<K>(lanes_at(ra, h * D + d), lanes_at(rb, h * D + d), row, storage);
          add(head, e);
          add(frame, e);
        }
      }
      heads[static_cast<size_t>(h)] = head;
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
TS_BLOCK_GROUP(bf16, block_bf16_avx512, TS_AVX512)
TS_BLOCK_GROUP(f16, block_f16_avx512, TS_AVX512)
TS_BLOCK_GROUP(f32, block_f32_avx512, TS_AVX512)
TS_BLOCK_GROUP(scalar, block_scalar_avx512, TS_AVX512)
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
  static const BlockGroup by_isa[3][4] = {
      {block_bf16_sse2, block_f16_sse2, block_f32_sse2, block_scalar_sse2},
      {block_bf16_avx2, block_f16_avx2, block_f32_avx2, block_scalar_avx2},
      {block_bf16_avx512, block_f16_avx512, block_f32_avx512, block_scalar_avx512}};
  const BlockGroup group = pick(by_isa, K);
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

// TOUCHSTONE_LANE_ISA=0|1|2 lowers it for a whole run: the same bits on any
// build, so a crash or a slow pass can be pinned on one instruction set.
int& lane_isa_cap() {
  static int cap = [] {
    const char* e = std::getenv("TOUCHSTONE_LANE_ISA");
    if (e && e[0] >= '0' && e[0] <= '2' && !e[1]) return e[0] - '0';
    return 2;
  }();
  return cap;
}

int lane_isa_in_use() { return lane_isa(); }

void chunk_sums(TensorRef a, TensorRef b, int64_t n, DType storage, Sums* chunks) {
  chunk_sums_of(a, b, nullptr, n, storage, storage, chunks, nullptr);
}

void chunk_sums_pair(TensorRef a, TensorRef b, TensorRef c, int64_t n, DType storage_b, DType storage_c,
                     Sums* chunks_b, Sums* chunks_c) {
  chunk_sums_of(a, b, &c, n, storage_b, storage_c, chunks_b, chunks_c);
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
