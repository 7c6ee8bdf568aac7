#pragma once
// Prime fields for the GPU: N×32-bit limbs, little-endian, Montgomery form with
// R = 2^(32N): the same bytes as the CPU's (N/2)×64-bit groth16::Fp, so points
// and scalars go between host and device as they are (and as a zkey stores
// them). A field is DFp<DLimbs<P>>, P the CPU field's parameters (the curve's
// own file, groth16/bn254.hpp or groth16/bls12_381.hpp, holds each constant
// once; DLimbs splits them into 32-bit words at compile time): 8 limbs for
// both scalar fields and BN254's Fq, 12 for BLS12-381's Fq.
// Multiplication on the device: the even/odd product (below); the host, and
// the device for comparison, have CIOS (Koç, Acar, Kaliski, "Analyzing and
// comparing Montgomery multiplication algorithms", 1996) on 32-bit words with
// 64-bit intermediates, and an 8-limb PTX carry-chain CIOS is kept for
// comparison; the GPU tests check all three. Sums and differences on the
// device are branch-free PTX carry chains.
// Requires p < 2^(32N−1) (every field zkfarm knows: the CPU's Fp asserts a
// spare top bit), so the CIOS result is < 2p and a sum of two elements never
// carries out of the top limb.
#include <cstddef>
#include <cstdint>

#include "groth16/hd.hpp"

namespace zkfarm::cuda {

/// N 32-bit words, for constants computed at compile time.
template <int N>
struct Words {
  uint32_t w[N];
};

/// 64-bit limbs (little-endian) as twice as many 32-bit words.
template <int N, size_t M>
constexpr Words<N> split_words(const uint64_t (&limbs)[M]) {
  static_assert(N == int(2 * M));
  Words<N> r{};
  for (int i = 0; i < N; ++i) r.w[i] = uint32_t(limbs[i / 2] >> (32 * (i % 2)));
  return r;
}

/// A field's constants for the device, from the CPU field's parameters P
/// (kModulus, kOne = R mod p, kInv = −p⁻¹ mod 2^64; groth16/field.hpp).
template <class P>
struct DLimbs {
  static constexpr int kLimbs = int(2 * (sizeof(P::kModulus) / sizeof(uint64_t)));
  ZK_HD static constexpr uint32_t mod(int i) {
    constexpr Words<kLimbs> m = split_words<kLimbs>(P::kModulus);
    return m.w[i];
  }
  ZK_HD static constexpr uint32_t one(int i) {  // R mod p
    constexpr Words<kLimbs> m = split_words<kLimbs>(P::kOne);
    return m.w[i];
  }
  static constexpr uint32_t kInv = uint32_t(P::kInv);  // −p⁻¹ mod 2^32: the low word of −p⁻¹ mod 2^64
};

template <class C>
struct DFp {
  static constexpr int N = C::kLimbs;
  uint32_t l[N];

  ZK_HD static DFp zero() {
    DFp r;
    ZK_UNROLL for (int i = 0; i < N; ++i) r.l[i] = 0;
    return r;
  }
  ZK_HD static DFp one() {
    DFp r;
    ZK_UNROLL for (int i = 0; i < N; ++i) r.l[i] = C::one(i);
    return r;
  }
  ZK_HD bool is_zero() const {
    uint32_t acc = 0;
    ZK_UNROLL for (int i = 0; i < N; ++i) acc |= l[i];
    return acc == 0;
  }
  ZK_HD bool operator==(const DFp& o) const {
    uint32_t acc = 0;
    ZK_UNROLL for (int i = 0; i < N; ++i) acc |= l[i] ^ o.l[i];
    return acc == 0;
  }

  /// x − p when x ≥ p (x < 2p).
  ZK_HD static void reduce_once(uint32_t x[N]) {
#if defined(__CUDA_ARCH__)
    reduce_once_ptx(x);
#else
    uint32_t t[N];
    uint32_t borrow = 0;
    ZK_UNROLL for (int i = 0; i < N; ++i) {
      uint64_t d = uint64_t(x[i]) - C::mod(i) - borrow;
      t[i] = uint32_t(d);
      borrow = uint32_t(d >> 63);
    }
    if (!borrow) {
      ZK_UNROLL for (int i = 0; i < N; ++i) x[i] = t[i];
    }
#endif
  }

#if defined(__CUDA_ARCH__)
  // Sums and differences on the device: PTX carry chains and no branch (a
  // warp's lanes that borrow and those that do not take one path; measured
  // on the H200, docs/performance.md 2026-12-03). Each chain is volatile asm: statements
  // whose only link is the carry flag must keep their order, and a
  // statement with no input (the borrow's mask) must not be merged or moved.
  __device__ __forceinline__ static void reduce_once_ptx(uint32_t x[N]) {
    uint32_t t[N], keep;
    asm volatile("sub.cc.u32 %0, %1, %2;" : "=r"(t[0]) : "r"(x[0]), "r"(C::mod(0)));
#pragma unroll
    for (int i = 1; i < N; ++i) asm volatile("subc.cc.u32 %0, %1, %2;" : "=r"(t[i]) : "r"(x[i]), "r"(C::mod(i)));
    asm volatile("subc.u32 %0, 0, 0;" : "=r"(keep));  // all ones when x < p: keep x
#pragma unroll
    for (int i = 0; i < N; ++i) x[i] = (x[i] & keep) | (t[i] & ~keep);
  }
  __device__ __forceinline__ static DFp add_ptx(const DFp& a, const DFp& b) {
    DFp r;  // a + b < 2p < 2^(32N): no carry out of the top word
    asm volatile("add.cc.u32 %0, %1, %2;" : "=r"(r.l[0]) : "r"(a.l[0]), "r"(b.l[0]));
#pragma unroll
    for (int i = 1; i < N - 1; ++i) asm volatile("addc.cc.u32 %0, %1, %2;" : "=r"(r.l[i]) : "r"(a.l[i]), "r"(b.l[i]));
    asm volatile("addc.u32 %0, %1, %2;" : "=r"(r.l[N - 1]) : "r"(a.l[N - 1]), "r"(b.l[N - 1]));
    reduce_once_ptx(r.l);
    return r;
  }
  __device__ __forceinline__ static DFp sub_ptx(const DFp& a, const DFp& b) {
    DFp r;
    uint32_t p[N], mask;
    asm volatile("sub.cc.u32 %0, %1, %2;" : "=r"(r.l[0]) : "r"(a.l[0]), "r"(b.l[0]));
#pragma unroll
    for (int i = 1; i < N; ++i) asm volatile("subc.cc.u32 %0, %1, %2;" : "=r"(r.l[i]) : "r"(a.l[i]), "r"(b.l[i]));
    asm volatile("subc.u32 %0, 0, 0;" : "=r"(mask));  // all ones when a < b: add p back
#pragma unroll
    for (int i = 0; i < N; ++i) p[i] = C::mod(i) & mask;
    asm volatile("add.cc.u32 %0, %0, %1;" : "+r"(r.l[0]) : "r"(p[0]));
#pragma unroll
    for (int i = 1; i < N - 1; ++i) asm volatile("addc.cc.u32 %0, %0, %1;" : "+r"(r.l[i]) : "r"(p[i]));
    asm volatile("addc.u32 %0, %0, %1;" : "+r"(r.l[N - 1]) : "r"(p[N - 1]));
    return r;
  }
#endif

  ZK_HD friend DFp operator+(const DFp& a, const DFp& b) {
#if defined(__CUDA_ARCH__)
    return add_ptx(a, b);
#else
    DFp r;
    uint64_t carry = 0;
    ZK_UNROLL for (int i = 0; i < N; ++i) {
      uint64_t s = uint64_t(a.l[i]) + b.l[i] + carry;
      r.l[i] = uint32_t(s);
      carry = s >> 32;
    }
    reduce_once(r.l);
    return r;
#endif
  }
  ZK_HD friend DFp operator-(const DFp& a, const DFp& b) {
#if defined(__CUDA_ARCH__)
    return sub_ptx(a, b);
#else
    DFp r;
    uint32_t borrow = 0;
    ZK_UNROLL for (int i = 0; i < N; ++i) {
      uint64_t d = uint64_t(a.l[i]) - b.l[i] - borrow;
      r.l[i] = uint32_t(d);
      borrow = uint32_t(d >> 63);
    }
    if (borrow) {
      uint64_t carry = 0;
      ZK_UNROLL for (int i = 0; i < N; ++i) {
        uint64_t s = uint64_t(r.l[i]) + C::mod(i) + carry;
        r.l[i] = uint32_t(s);
        carry = s >> 32;
      }
    }
    return r;
#endif
  }
  ZK_HD DFp operator-() const { return zero() - *this; }
  ZK_HD DFp dbl() const { return *this + *this; }

  /// Montgomery product a·b·R⁻¹ mod p, portable CIOS on 32-bit words.
  ZK_HD static DFp mul_portable(const DFp& a, const DFp& b) {
    uint32_t t[N + 2];
    ZK_UNROLL for (int i = 0; i < N + 2; ++i) t[i] = 0;
    ZK_UNROLL for (int i = 0; i < N; ++i) {
      uint64_t carry = 0;
      ZK_UNROLL for (int j = 0; j < N; ++j) {
        uint64_t s = uint64_t(a.l[j]) * b.l[i] + t[j] + carry;
        t[j] = uint32_t(s);
        carry = s >> 32;
      }
      uint64_t s = uint64_t(t[N]) + carry;
      t[N] = uint32_t(s);
      t[N + 1] = uint32_t(s >> 32);
      uint32_t m = t[0] * C::kInv;
      s = uint64_t(m) * C::mod(0) + t[0];
      carry = s >> 32;
      ZK_UNROLL for (int j = 1; j < N; ++j) {
        s = uint64_t(m) * C::mod(j) + t[j] + carry;
        t[j - 1] = uint32_t(s);
        carry = s >> 32;
      }
      s = uint64_t(t[N]) + carry;
      t[N - 1] = uint32_t(s);
      t[N] = t[N + 1] + uint32_t(s >> 32);
    }
    DFp r;
    ZK_UNROLL for (int i = 0; i < N; ++i) r.l[i] = t[i];
    reduce_once(r.l);
    return r;
  }

#if defined(__CUDA_ARCH__)
  /// t[0..7] += lo(a·b) word by word, the carry into t[8], t[9]: one asm
  /// statement, so nothing can be scheduled inside the carry chain.
  __device__ __forceinline__ static void mad_lo_pass(uint32_t t[10], const uint32_t a[8], uint32_t b) {
    asm volatile(
        "mad.lo.cc.u32 %0, %10, %18, %0;\n\t"
        "madc.lo.cc.u32 %1, %11, %18, %1;\n\t"
        "madc.lo.cc.u32 %2, %12, %18, %2;\n\t"
        "madc.lo.cc.u32 %3, %13, %18, %3;\n\t"
        "madc.lo.cc.u32 %4, %14, %18, %4;\n\t"
        "madc.lo.cc.u32 %5, %15, %18, %5;\n\t"
        "madc.lo.cc.u32 %6, %16, %18, %6;\n\t"
        "madc.lo.cc.u32 %7, %17, %18, %7;\n\t"
        "addc.cc.u32 %8, %8, 0;\n\t"
        "addc.u32 %9, %9, 0;"
        : "+r"(t[0]), "+r"(t[1]), "+r"(t[2]), "+r"(t[3]), "+r"(t[4]), "+r"(t[5]), "+r"(t[6]), "+r"(t[7]), "+r"(t[8]), "+r"(t[9])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(a[4]), "r"(a[5]), "r"(a[6]), "r"(a[7]), "r"(b));
  }
  /// t[1..8] += hi(a·b) word by word, the carry into t[9].
  __device__ __forceinline__ static void mad_hi_pass(uint32_t t[10], const uint32_t a[8], uint32_t b) {
    asm volatile(
        "mad.hi.cc.u32 %0, %9, %17, %0;\n\t"
        "madc.hi.cc.u32 %1, %10, %17, %1;\n\t"
        "madc.hi.cc.u32 %2, %11, %17, %2;\n\t"
        "madc.hi.cc.u32 %3, %12, %17, %3;\n\t"
        "madc.hi.cc.u32 %4, %13, %17, %4;\n\t"
        "madc.hi.cc.u32 %5, %14, %17, %5;\n\t"
        "madc.hi.cc.u32 %6, %15, %17, %6;\n\t"
        "madc.hi.cc.u32 %7, %16, %17, %7;\n\t"
        "addc.u32 %8, %8, 0;"
        : "+r"(t[1]), "+r"(t[2]), "+r"(t[3]), "+r"(t[4]), "+r"(t[5]), "+r"(t[6]), "+r"(t[7]), "+r"(t[8]), "+r"(t[9])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(a[4]), "r"(a[5]), "r"(a[6]), "r"(a[7]), "r"(b));
  }

  /// The same CIOS with PTX carry chains: per word of b, the low halves of
  /// a·b_i, then the high halves, then the same for m·p. Written for 8 limbs
  /// (one asm statement per pass); kept for comparison only.
  __device__ __forceinline__ static DFp mul_ptx(const DFp& a, const DFp& b) {
    static_assert(N == 8, "the PTX carry-chain product is written for 8 limbs");
    uint32_t t[10] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
    uint32_t p[8];
#pragma unroll
    for (int j = 0; j < N; ++j) p[j] = C::mod(j);
#pragma unroll
    for (int i = 0; i < N; ++i) {
      mad_lo_pass(t, a.l, b.l[i]);
      mad_hi_pass(t, a.l, b.l[i]);
      const uint32_t m = t[0] * C::kInv;
      mad_lo_pass(t, p, m);
      mad_hi_pass(t, p, m);
      // t[0] is now 0: shift down one word.
#pragma unroll
      for (int j = 0; j < 9; ++j) t[j] = t[j + 1];
      t[9] = 0;
    }
    DFp r;
#pragma unroll
    for (int i = 0; i < N; ++i) r.l[i] = t[i];
    reduce_once(r.l);
    return r;
  }
#endif

#if defined(__CUDA_ARCH__)
  // The even/odd Montgomery product (the scheme of Emmart, Zheng and Weems,
  // "Faster modular exponentiation using double precision floating point
  // arithmetic on the GPU", ARITH 2018, and of sppark's ff/mont_t.cuh): the
  // partial products of even and of odd words of a go to two accumulators,
  // so each carry chain is one unbroken run of mad.lo/madc.hi pairs and no
  // word shifts are needed; the accumulators swap roles every word of b (the
  // CIOS shift by one word). Needs an even N and p < 2^(32N−1). The carry
  // flag passes between consecutive asm statements, as in sppark; they are
  // all volatile, so the compiler keeps their order (among themselves and
  // with the volatile chains of reduce_once that follow once inlined).

  /// acc[j], acc[j+1] = a[j]·bi (lo, hi) for even j < n.
  __device__ __forceinline__ static void eo_mul(uint32_t* acc, const uint32_t* a, uint32_t bi, int n) {
#pragma unroll
    for (int j = 0; j < n; j += 2)
      asm volatile("mul.lo.u32 %0, %2, %3; mul.hi.u32 %1, %2, %3;" : "=r"(acc[j]), "=r"(acc[j + 1]) : "r"(a[j]), "r"(bi));
  }
  /// acc += Σ_{even j < n} a[j]·bi·2^(32j), leaving the carry flag set by the top word.
  __device__ __forceinline__ static void eo_mad(uint32_t* acc, const uint32_t* a, uint32_t bi, int n) {
    asm volatile("mad.lo.cc.u32 %0, %2, %3, %0; madc.hi.cc.u32 %1, %2, %3, %1;" : "+r"(acc[0]), "+r"(acc[1]) : "r"(a[0]), "r"(bi));
#pragma unroll
    for (int j = 2; j < n; j += 2)
      asm volatile("madc.lo.cc.u32 %0, %2, %3, %0; madc.hi.cc.u32 %1, %2, %3, %1;" : "+r"(acc[j]), "+r"(acc[j + 1]) : "r"(a[j]), "r"(bi));
  }
  /// odd = (odd >> 2 words) + Σ a[j]·bi pairs, taking the carry flag in.
  __device__ __forceinline__ static void eo_mad_shift(uint32_t* odd, const uint32_t* a, uint32_t bi) {
#pragma unroll
    for (int j = 0; j < N - 2; j += 2)
      asm volatile("madc.lo.cc.u32 %0, %2, %3, %4; madc.hi.cc.u32 %1, %2, %3, %5;"
          : "=r"(odd[j]), "=r"(odd[j + 1]) : "r"(a[j]), "r"(bi), "r"(odd[j + 2]), "r"(odd[j + 3]));
    asm volatile("madc.lo.cc.u32 %0, %2, %3, 0; madc.hi.u32 %1, %2, %3, 0;" : "=r"(odd[N - 2]), "=r"(odd[N - 1]) : "r"(a[N - 2]), "r"(bi));
  }
  /// One word bi of b into the accumulators (even: words at 2^(32k), odd at
  /// 2^(32(k+1))), then one Montgomery reduction step.
  __device__ __forceinline__ static void eo_row(uint32_t* even, uint32_t* odd, const uint32_t* a, uint32_t bi,
                                                const uint32_t* p, bool first) {
    if (first) {
      eo_mul(odd, a + 1, bi, N);
      eo_mul(even, a, bi, N);
    } else {
      asm volatile("add.cc.u32 %0, %0, %1;" : "+r"(even[0]) : "r"(odd[1]));
      eo_mad_shift(odd, a + 1, bi);
      eo_mad(even, a, bi, N);
      asm volatile("addc.u32 %0, %0, 0;" : "+r"(odd[N - 1]));
    }
    const uint32_t m = even[0] * C::kInv;
    eo_mad(odd, p + 1, m, N);
    eo_mad(even, p, m, N);
    asm volatile("addc.u32 %0, %0, 0;" : "+r"(odd[N - 1]));
  }

  /// Montgomery product a·b·R⁻¹ mod p by even/odd accumulation (above).
  __device__ __forceinline__ static DFp mul_evenodd(const DFp& a, const DFp& b) {
    static_assert(N % 2 == 0, "the even/odd product needs an even limb count");
    uint32_t p[N];
#pragma unroll
    for (int j = 0; j < N; ++j) p[j] = C::mod(j);
    uint32_t even[N], odd[N];
#pragma unroll
    for (int i = 0; i < N; i += 2) {
      eo_row(even, odd, a.l, b.l[i], p, i == 0);
      eo_row(odd, even, a.l, b.l[i + 1], p, false);
    }
    // even + (odd >> 1 word): the result, below 2p.
    asm volatile("add.cc.u32 %0, %0, %1;" : "+r"(even[0]) : "r"(odd[1]));
#pragma unroll
    for (int j = 1; j < N - 1; ++j) asm volatile("addc.cc.u32 %0, %0, %1;" : "+r"(even[j]) : "r"(odd[j + 1]));
    asm volatile("addc.u32 %0, %0, 0;" : "+r"(even[N - 1]));
    DFp r;
#pragma unroll
    for (int j = 0; j < N; ++j) r.l[j] = even[j];
    reduce_once(r.l);
    return r;
  }
#endif

#if defined(__CUDA_ARCH__)
  /// One out-of-line copy per field: inlined at every call site, the point
  /// additions grew past the instruction cache and warps stalled on fetch
  /// (Nsight Compute on the H200: 57% of stall cycles, "no instruction").
  // The even/odd product for every limb count, chosen by the MSMs on the
  // H200 (docs/performance.md, 2026-12-03): BN254's G1 MSM at 2^24 71.6 ms
  // against 81.0 with the portable CIOS; BLS12-381's 160 against 168.5 once
  // its accumulation runs 384 threads a block (at 128 the portable CIOS had
  // been ahead, 174.5 against 178.6). ZKFARM_CUDA_PORTABLE_MUL selects the
  // portable CIOS everywhere, ZKFARM_CUDA_PTX_MUL the 8-limb PTX chains.
  __device__ __noinline__ static DFp mul_call(DFp a, DFp b) {
#if defined(ZKFARM_CUDA_PTX_MUL)
    if constexpr (N == 8) return mul_ptx(a, b);
#endif
#if defined(ZKFARM_CUDA_PORTABLE_MUL)
    return mul_portable(a, b);
#else
    return mul_evenodd(a, b);
#endif
  }
#endif

  ZK_HD friend DFp operator*(const DFp& a, const DFp& b) {
#if defined(__CUDA_ARCH__)
    return mul_call(a, b);
#else
    return mul_portable(a, b);
#endif
  }
  ZK_HD DFp sqr() const { return *this * *this; }
  ZK_HD DFp& operator+=(const DFp& o) { return *this = *this + o; }
  ZK_HD DFp& operator-=(const DFp& o) { return *this = *this - o; }
  ZK_HD DFp& operator*=(const DFp& o) { return *this = *this * o; }

  /// x⁻¹ = x^(p−2) (Fermat), and 0 for 0: N·32 squarings and about half as
  /// many multiplications, right to left over p − 2's bits. For tables built
  /// once (the precomputed MSM bases, msm_fold_point), not for hot loops.
  ZK_HD DFp inverse() const {
    static_assert(C::mod(0) >= 2, "p − 2 must not borrow from the second word");
    DFp r = one(), base = *this;
    for (int i = 0; i < N; ++i) {
      uint32_t e = C::mod(i) - (i == 0 ? 2u : 0u);
      for (int b = 0; b < 32; ++b) {
        if (e & 1u) r *= base;
        base = base.sqr();
        e >>= 1;
      }
    }
    return r;
  }

  /// Out of Montgomery form: the canonical integer's N words (x·R⁻¹).
  ZK_HD DFp from_montgomery() const {
    DFp one_plain = zero();
    one_plain.l[0] = 1;
    return *this * one_plain;
  }
};

/// Fq2 = Fq[u]/(u² + 1) (both curves' quadratic extension), c0 then c1 as
/// snarkjs stores it (2·N·4 bytes: 64 for BN254, 96 for BLS12-381).
template <class DFq>
struct DFp2 {
  DFq c0, c1;

  ZK_HD static DFp2 zero() { return {DFq::zero(), DFq::zero()}; }
  ZK_HD static DFp2 one() { return {DFq::one(), DFq::zero()}; }
  ZK_HD bool is_zero() const { return c0.is_zero() && c1.is_zero(); }
  ZK_HD bool operator==(const DFp2& o) const { return c0 == o.c0 && c1 == o.c1; }
  ZK_HD friend DFp2 operator+(const DFp2& a, const DFp2& b) { return {a.c0 + b.c0, a.c1 + b.c1}; }
  ZK_HD friend DFp2 operator-(const DFp2& a, const DFp2& b) { return {a.c0 - b.c0, a.c1 - b.c1}; }
  ZK_HD DFp2 operator-() const { return {-c0, -c1}; }
  ZK_HD DFp2 dbl() const { return {c0.dbl(), c1.dbl()}; }
  /// Karatsuba: 3 Fq multiplications.
  ZK_HD friend DFp2 operator*(const DFp2& a, const DFp2& b) {
    DFq t0 = a.c0 * b.c0, t1 = a.c1 * b.c1;
    return {t0 - t1, (a.c0 + a.c1) * (b.c0 + b.c1) - t0 - t1};
  }
  ZK_HD DFp2 sqr() const { return {(c0 + c1) * (c0 - c1), (c0 * c1).dbl()}; }
  ZK_HD DFp2& operator*=(const DFp2& o) { return *this = *this * o; }
  /// (c0 − c1·u) / (c0² + c1²) since u² = −1; 0 for 0.
  ZK_HD DFp2 inverse() const {
    const DFq t = (c0.sqr() + c1.sqr()).inverse();
    return {c0 * t, -(c1 * t)};
  }
};

}  // namespace zkfarm::cuda
