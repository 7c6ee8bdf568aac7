#include "groth16/mont_mul_lanes.hpp"

#include <cstdlib>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace zkfarm {

#if defined(__x86_64__)

bool ifma_lanes_available() {
  static const bool ok = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512ifma") && !std::getenv("ZKFARM_NO_IFMA");
  }();
  return ok;
}

namespace {

#define ZKFARM_IFMA __attribute__((target("avx512f,avx512ifma")))
// Each step inlined into its loop: reduce8 left out of line took its ten
// columns through memory (measured slower than the product it saved).
#define ZKFARM_INLINE inline __attribute__((always_inline))

// 8 elements (AoS: 4 limbs each) as 4 vectors of one limb of each lane.
ZKFARM_IFMA ZKFARM_INLINE void load8(const uint64_t* x, size_t stride, __m512i out[4]) {
  if (stride == 0) {
    for (int k = 0; k < 4; ++k) out[k] = _mm512_set1_epi64(static_cast<long long>(x[k]));
    return;
  }
  const __m512i z0 = _mm512_loadu_si512(x), z1 = _mm512_loadu_si512(x + 8), z2 = _mm512_loadu_si512(x + 16),
                z3 = _mm512_loadu_si512(x + 24);
  const __m512i lo = _mm512_set_epi64(13, 9, 5, 1, 12, 8, 4, 0), hi = _mm512_set_epi64(15, 11, 7, 3, 14, 10, 6, 2);
  const __m512i t0 = _mm512_permutex2var_epi64(z0, lo, z1), t1 = _mm512_permutex2var_epi64(z0, hi, z1);
  const __m512i t2 = _mm512_permutex2var_epi64(z2, lo, z3), t3 = _mm512_permutex2var_epi64(z2, hi, z3);
  const __m512i first = _mm512_set_epi64(11, 10, 9, 8, 3, 2, 1, 0), second = _mm512_set_epi64(15, 14, 13, 12, 7, 6, 5, 4);
  out[0] = _mm512_permutex2var_epi64(t0, first, t2);
  out[1] = _mm512_permutex2var_epi64(t0, second, t2);
  out[2] = _mm512_permutex2var_epi64(t1, first, t3);
  out[3] = _mm512_permutex2var_epi64(t1, second, t3);
}

// The inverse of load8 (stride 1).
ZKFARM_IFMA ZKFARM_INLINE void store8(uint64_t* x, const __m512i in[4]) {
  const __m512i lo = _mm512_set_epi64(11, 3, 10, 2, 9, 1, 8, 0), hi = _mm512_set_epi64(15, 7, 14, 6, 13, 5, 12, 4);
  const __m512i u0 = _mm512_permutex2var_epi64(in[0], lo, in[1]), u1 = _mm512_permutex2var_epi64(in[2], lo, in[3]);
  const __m512i u2 = _mm512_permutex2var_epi64(in[0], hi, in[1]), u3 = _mm512_permutex2var_epi64(in[2], hi, in[3]);
  const __m512i first = _mm512_set_epi64(11, 10, 3, 2, 9, 8, 1, 0), second = _mm512_set_epi64(15, 14, 7, 6, 13, 12, 5, 4);
  _mm512_storeu_si512(x, _mm512_permutex2var_epi64(u0, first, u1));
  _mm512_storeu_si512(x + 8, _mm512_permutex2var_epi64(u0, second, u1));
  _mm512_storeu_si512(x + 16, _mm512_permutex2var_epi64(u2, first, u3));
  _mm512_storeu_si512(x + 24, _mm512_permutex2var_epi64(u2, second, u3));
}

// 4 limbs of 64 bits -> 5 of 52.
ZKFARM_IFMA ZKFARM_INLINE void to52(const __m512i x[4], __m512i out[5]) {
  const __m512i m = _mm512_set1_epi64((int64_t(1) << 52) - 1);
  out[0] = _mm512_and_si512(x[0], m);
  out[1] = _mm512_and_si512(_mm512_or_si512(_mm512_srli_epi64(x[0], 52), _mm512_slli_epi64(x[1], 12)), m);
  out[2] = _mm512_and_si512(_mm512_or_si512(_mm512_srli_epi64(x[1], 40), _mm512_slli_epi64(x[2], 24)), m);
  out[3] = _mm512_and_si512(_mm512_or_si512(_mm512_srli_epi64(x[2], 28), _mm512_slli_epi64(x[3], 36)), m);
  out[4] = _mm512_srli_epi64(x[3], 16);
}

// Montgomery's reduction of 10 columns of 52 bits (a product, or an element
// alone for the reduction by itself): c·2⁻²⁵⁶ mod p, canonical, into out.
ZKFARM_IFMA ZKFARM_INLINE void reduce8(__m512i c[10], const __m512i p52[5], __m512i pinv, const uint64_t p[4], __m512i out[4]) {
  const __m512i zero = _mm512_setzero_si512(), m52 = _mm512_set1_epi64((int64_t(1) << 52) - 1);
  // Four rounds of 52 bits, one of 48: t + m·p ≡ 0 mod 2^(52k+…), then shift.
  for (int k = 0; k < 5; ++k) {
    __m512i m = _mm512_madd52lo_epu64(zero, c[k], pinv);  // (c_k mod 2^52)·(−p⁻¹) mod 2^52
    if (k == 4) m = _mm512_and_si512(m, _mm512_set1_epi64((int64_t(1) << 48) - 1));
    for (int j = 0; j < 5; ++j) {
      c[k + j] = _mm512_madd52lo_epu64(c[k + j], m, p52[j]);
      c[k + j + 1] = _mm512_madd52hi_epu64(c[k + j + 1], m, p52[j]);
    }
    if (k < 4) c[k + 1] = _mm512_add_epi64(c[k + 1], _mm512_srli_epi64(c[k], 52));
  }
  // c[4] ≡ 0 mod 2^48: the result is c[4]/2^48 + c[5]·2^4 + c[6]·2^56 + …
  const __m512i t0 = _mm512_srli_epi64(_mm512_and_si512(c[4], m52), 48);
  c[5] = _mm512_add_epi64(c[5], _mm512_srli_epi64(c[4], 52));
  for (int k = 5; k < 9; ++k) {
    c[k + 1] = _mm512_add_epi64(c[k + 1], _mm512_srli_epi64(c[k], 52));
    c[k] = _mm512_and_si512(c[k], m52);
  }
  __m512i r[4];
  r[0] = _mm512_or_si512(_mm512_or_si512(t0, _mm512_slli_epi64(c[5], 4)), _mm512_slli_epi64(c[6], 56));
  r[1] = _mm512_or_si512(_mm512_srli_epi64(c[6], 8), _mm512_slli_epi64(c[7], 44));
  r[2] = _mm512_or_si512(_mm512_srli_epi64(c[7], 20), _mm512_slli_epi64(c[8], 32));
  r[3] = _mm512_or_si512(_mm512_srli_epi64(c[8], 32), _mm512_slli_epi64(c[9], 20));
  // r < 2p: subtract p where r ≥ p (the borrow of r − p says which).
  __m512i d[4];
  __mmask8 borrow = 0;
  for (int k = 0; k < 4; ++k) {
    const __m512i pk = _mm512_set1_epi64(static_cast<long long>(p[k]));
    const __m512i diff = _mm512_sub_epi64(r[k], pk);
    const __mmask8 below = _mm512_cmplt_epu64_mask(r[k], pk), equal = _mm512_cmpeq_epu64_mask(r[k], pk);
    d[k] = _mm512_mask_sub_epi64(diff, borrow, diff, _mm512_set1_epi64(1));
    borrow = below | (equal & borrow);
  }
  for (int k = 0; k < 4; ++k) out[k] = _mm512_mask_blend_epi64(borrow, d[k], r[k]);
}

ZKFARM_IFMA ZKFARM_INLINE void mul8(const __m512i a[5], const __m512i b[5], const __m512i p52[5], __m512i pinv,
                             const uint64_t p[4], __m512i out[4]) {
  const __m512i zero = _mm512_setzero_si512();
  __m512i c[10];
  for (auto& x : c) x = zero;
  for (int i = 0; i < 5; ++i)
    for (int j = 0; j < 5; ++j) {
      c[i + j] = _mm512_madd52lo_epu64(c[i + j], a[i], b[j]);
      c[i + j + 1] = _mm512_madd52hi_epu64(c[i + j + 1], a[i], b[j]);
    }
  reduce8(c, p52, pinv, p, out);
}

// p in 52-bit limbs and −p⁻¹ mod 2⁵², broadcast to every lane.
struct Modulus52 {
  __m512i p52[5];
  __m512i pinv;
};

ZKFARM_IFMA ZKFARM_INLINE Modulus52 modulus52(const uint64_t p[4], uint64_t inv) {
  Modulus52 m;
  __m512i p64[4];
  for (int k = 0; k < 4; ++k) p64[k] = _mm512_set1_epi64(static_cast<long long>(p[k]));
  to52(p64, m.p52);
  m.pinv = _mm512_set1_epi64(static_cast<long long>(inv & ((uint64_t(1) << 52) - 1)));
  return m;
}

}  // namespace

ZKFARM_IFMA void mont_mul_lanes_ifma(const uint64_t* a, size_t a_stride, const uint64_t* b, size_t b_stride,
                                     uint64_t* r, size_t n, const uint64_t p[4], uint64_t inv) {
  const Modulus52 m = modulus52(p, inv);
  // A constant operand (stride 0) is converted once, not once a group.
  __m512i y[4], b52[5];
  if (b_stride == 0) {
    load8(b, 0, y);
    to52(y, b52);
  }
  for (size_t i = 0; i + 8 <= n; i += 8) {
    __m512i x[4], a52[5], out[4];
    load8(a + 4 * i * a_stride, a_stride, x);
    to52(x, a52);
    if (b_stride != 0) {
      load8(b + 4 * i * b_stride, b_stride, y);
      to52(y, b52);
    }
    mul8(a52, b52, m.p52, m.pinv, p, out);
    store8(r + 4 * i, out);
  }
}

ZKFARM_IFMA void mont_reduce_lanes_ifma(const uint64_t* a, uint64_t* r, size_t n, const uint64_t p[4], uint64_t inv) {
  const Modulus52 m = modulus52(p, inv);
  const __m512i zero = _mm512_setzero_si512();
  for (size_t i = 0; i + 8 <= n; i += 8) {
    // a·1: the columns are a's own limbs, no products to form.
    __m512i x[4], c[10], out[4];
    load8(a + 4 * i, 1, x);
    to52(x, c);
    for (int k = 5; k < 10; ++k) c[k] = zero;
    reduce8(c, m.p52, m.pinv, p, out);
    store8(r + 4 * i, out);
  }
}

#else

bool ifma_lanes_available() { return false; }
void mont_mul_lanes_ifma(const uint64_t*, size_t, const uint64_t*, size_t, uint64_t*, size_t, const uint64_t*, uint64_t) {}
void mont_reduce_lanes_ifma(const uint64_t*, uint64_t*, size_t, const uint64_t*, uint64_t) {}

#endif

}  // namespace zkfarm
