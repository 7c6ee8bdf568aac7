#pragma once
// Prime fields for the GPU: 8×32-bit limbs, little-endian, Montgomery form with
// R = 2^256: the same 32 bytes as the CPU's 4×64-bit groth16::Fp, so points and
// scalars go between host and device as they are (and as a zkey stores them).
// Templated over the field's constants, so another curve's fields can follow.
// Multiplication: CIOS (Koç, Acar, Kaliski, "Analyzing and comparing Montgomery
// multiplication algorithms", 1996) on 32-bit words with 64-bit intermediates
// (IMAD.WIDE on the GPU); a PTX carry-chain form (mad.lo.cc / madc.hi.cc) is
// kept for comparison and checked by the GPU tests too.
// Requires a modulus below 2^254 (both BN254 fields), so the CIOS result is < 2p
// and a sum of two elements never carries out of 256 bits.
#include <cstdint>

#include "gpu_worker/cuda/hd.hpp"

namespace zkfarm::cuda {

/// BN254's base field q (G1 and G2 coordinates). Limbs from groth16/bn254.hpp.
struct FqConsts {
  ZK_HD static constexpr uint32_t mod(int i) {
    constexpr uint32_t m[8] = {0xd87cfd47u, 0x3c208c16u, 0x6871ca8du, 0x97816a91u,
                               0x8181585du, 0xb85045b6u, 0xe131a029u, 0x30644e72u};
    return m[i];
  }
  ZK_HD static constexpr uint32_t one(int i) {  // R mod q
    constexpr uint32_t m[8] = {0xc58f0d9du, 0xd35d438du, 0xf5c70b3du, 0x0a78eb28u,
                               0x7879462cu, 0x666ea36fu, 0x9a07df2fu, 0x0e0a77c1u};
    return m[i];
  }
  static constexpr uint32_t kInv = 0xe4866389u;  // −q⁻¹ mod 2^32
};

/// BN254's scalar field r (NTT values, MSM scalars).
struct FrConsts {
  ZK_HD static constexpr uint32_t mod(int i) {
    constexpr uint32_t m[8] = {0xf0000001u, 0x43e1f593u, 0x79b97091u, 0x2833e848u,
                               0x8181585du, 0xb85045b6u, 0xe131a029u, 0x30644e72u};
    return m[i];
  }
  ZK_HD static constexpr uint32_t one(int i) {
    constexpr uint32_t m[8] = {0x4ffffffbu, 0xac96341cu, 0x9f60cd29u, 0x36fc7695u,
                               0x7879462eu, 0x666ea36fu, 0x9a07df2fu, 0x0e0a77c1u};
    return m[i];
  }
  static constexpr uint32_t kInv = 0xefffffffu;
};

template <class C>
struct DFp {
  uint32_t l[8];

  ZK_HD static DFp zero() {
    DFp r;
    ZK_UNROLL for (int i = 0; i < 8; ++i) r.l[i] = 0;
    return r;
  }
  ZK_HD static DFp one() {
    DFp r;
    ZK_UNROLL for (int i = 0; i < 8; ++i) r.l[i] = C::one(i);
    return r;
  }
  ZK_HD bool is_zero() const {
    uint32_t acc = 0;
    ZK_UNROLL for (int i = 0; i < 8; ++i) acc |= l[i];
    return acc == 0;
  }
  ZK_HD bool operator==(const DFp& o) const {
    uint32_t acc = 0;
    ZK_UNROLL for (int i = 0; i < 8; ++i) acc |= l[i] ^ o.l[i];
    return acc == 0;
  }

  /// x − p when x ≥ p (x < 2p).
  ZK_HD static void reduce_once(uint32_t x[8]) {
    uint32_t t[8];
    uint32_t borrow = 0;
    ZK_UNROLL for (int i = 0; i < 8; ++i) {
      uint64_t d = uint64_t(x[i]) - C::mod(i) - borrow;
      t[i] = uint32_t(d);
      borrow = uint32_t(d >> 63);
    }
    if (!borrow) {
      ZK_UNROLL for (int i = 0; i < 8; ++i) x[i] = t[i];
    }
  }

  ZK_HD friend DFp operator+(const DFp& a, const DFp& b) {
    DFp r;
    uint64_t carry = 0;
    ZK_UNROLL for (int i = 0; i < 8; ++i) {
      uint64_t s = uint64_t(a.l[i]) + b.l[i] + carry;
      r.l[i] = uint32_t(s);
      carry = s >> 32;
    }
    reduce_once(r.l);
    return r;
  }
  ZK_HD friend DFp operator-(const DFp& a, const DFp& b) {
    DFp r;
    uint32_t borrow = 0;
    ZK_UNROLL for (int i = 0; i < 8; ++i) {
      uint64_t d = uint64_t(a.l[i]) - b.l[i] - borrow;
      r.l[i] = uint32_t(d);
      borrow = uint32_t(d >> 63);
    }
    if (borrow) {
      uint64_t carry = 0;
      ZK_UNROLL for (int i = 0; i < 8; ++i) {
        uint64_t s = uint64_t(r.l[i]) + C::mod(i) + carry;
        r.l[i] = uint32_t(s);
        carry = s >> 32;
      }
    }
    return r;
  }
  ZK_HD DFp operator-() const { return zero() - *this; }
  ZK_HD DFp dbl() const { return *this + *this; }

  /// Montgomery product a·b·R⁻¹ mod p, portable CIOS on 32-bit words.
  ZK_HD static DFp mul_portable(const DFp& a, const DFp& b) {
    uint32_t t[10] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
    ZK_UNROLL for (int i = 0; i < 8; ++i) {
      uint64_t carry = 0;
      ZK_UNROLL for (int j = 0; j < 8; ++j) {
        uint64_t s = uint64_t(a.l[j]) * b.l[i] + t[j] + carry;
        t[j] = uint32_t(s);
        carry = s >> 32;
      }
      uint64_t s = uint64_t(t[8]) + carry;
      t[8] = uint32_t(s);
      t[9] = uint32_t(s >> 32);
      uint32_t m = t[0] * C::kInv;
      s = uint64_t(m) * C::mod(0) + t[0];
      carry = s >> 32;
      ZK_UNROLL for (int j = 1; j < 8; ++j) {
        s = uint64_t(m) * C::mod(j) + t[j] + carry;
        t[j - 1] = uint32_t(s);
        carry = s >> 32;
      }
      s = uint64_t(t[8]) + carry;
      t[7] = uint32_t(s);
      t[8] = t[9] + uint32_t(s >> 32);
    }
    DFp r;
    ZK_UNROLL for (int i = 0; i < 8; ++i) r.l[i] = t[i];
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
  /// a·b_i, then the high halves, then the same for m·p.
  __device__ __forceinline__ static DFp mul_ptx(const DFp& a, const DFp& b) {
    uint32_t t[10] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
    uint32_t p[8];
#pragma unroll
    for (int j = 0; j < 8; ++j) p[j] = C::mod(j);
#pragma unroll
    for (int i = 0; i < 8; ++i) {
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
    for (int i = 0; i < 8; ++i) r.l[i] = t[i];
    reduce_once(r.l);
    return r;
  }
#endif

#if defined(__CUDA_ARCH__)
  /// One out-of-line copy per field: inlined at every call site, the point
  /// additions grew past the instruction cache and warps stalled on fetch
  /// (Nsight Compute on the H200: 57% of stall cycles, "no instruction").
  // The portable form is the default: nvcc turns it into IMAD.WIDE chains that
  // measured 3–4% faster in the MSM on the H200 than the PTX carry chains
  // (docs/performance.md); ZKFARM_CUDA_PTX_MUL selects those.
  __device__ __noinline__ static DFp mul_call(DFp a, DFp b) {
#if defined(ZKFARM_CUDA_PTX_MUL)
    return mul_ptx(a, b);
#else
    return mul_portable(a, b);
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

  /// Out of Montgomery form: the canonical integer's 8 words (x·R⁻¹).
  ZK_HD DFp from_montgomery() const {
    DFp one_plain = zero();
    one_plain.l[0] = 1;
    return *this * one_plain;
  }
};

using DFq = DFp<FqConsts>;
using DFr = DFp<FrConsts>;

/// Fq2 = Fq[u]/(u² + 1), c0 then c1 as snarkjs stores it (64 bytes).
struct DFq2 {
  DFq c0, c1;

  ZK_HD static DFq2 zero() { return {DFq::zero(), DFq::zero()}; }
  ZK_HD static DFq2 one() { return {DFq::one(), DFq::zero()}; }
  ZK_HD bool is_zero() const { return c0.is_zero() && c1.is_zero(); }
  ZK_HD bool operator==(const DFq2& o) const { return c0 == o.c0 && c1 == o.c1; }
  ZK_HD friend DFq2 operator+(const DFq2& a, const DFq2& b) { return {a.c0 + b.c0, a.c1 + b.c1}; }
  ZK_HD friend DFq2 operator-(const DFq2& a, const DFq2& b) { return {a.c0 - b.c0, a.c1 - b.c1}; }
  ZK_HD DFq2 operator-() const { return {-c0, -c1}; }
  ZK_HD DFq2 dbl() const { return {c0.dbl(), c1.dbl()}; }
  /// Karatsuba: 3 Fq multiplications.
  ZK_HD friend DFq2 operator*(const DFq2& a, const DFq2& b) {
    DFq t0 = a.c0 * b.c0, t1 = a.c1 * b.c1;
    return {t0 - t1, (a.c0 + a.c1) * (b.c0 + b.c1) - t0 - t1};
  }
  ZK_HD DFq2 sqr() const { return {(c0 + c1) * (c0 - c1), (c0 * c1).dbl()}; }
  ZK_HD DFq2& operator*=(const DFq2& o) { return *this = *this * o; }
};

}  // namespace zkfarm::cuda
