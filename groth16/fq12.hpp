#pragma once
// The BN254 extension tower above Fq2 (bn254.hpp), for the pairing:
//   Fq6  = Fq2[v]/(v³ − ξ), ξ = 9 + u   (96 bytes: c0 + c1·v + c2·v²)
//   Fq12 = Fq6[w]/(w² − v)              (384 bytes: c0 + c1·w)
// so w⁶ = ξ, the tower of EIP-197, go-ethereum's bn256, arkworks' ark-bn254 and
// snarkjs/ffjavascript's bn128 (whose vk_alphabeta_12 lists c0.c0.c0, c0.c0.c1,
// c0.c1.c0, …, c1.c2.c1 in this order). All coordinates are Montgomery Fq.
// Formulas: Fq6 multiplication and squaring from Devegili, Ó hÉigeartaigh,
// Scott, Dahab, "Multiplication and squaring on pairing-friendly fields"
// (eprint 2006/471: Karatsuba, and Chung–Hasan's SQR2); Fq12 squaring in the
// cyclotomic subgroup from Granger, Scott, "Faster squaring in the cyclotomic
// subgroup of sixth degree extensions" (PKC 2010, eprint 2009/565, §3.1).
#include <cstdint>

#include "groth16/bn254.hpp"

namespace zkfarm {

/// a·ξ with ξ = 9 + u: (9a0 − a1) + (a0 + 9a1)·u, additions only.
inline Fq2 fq2_mul_by_xi(const Fq2& a) {
  const Fq t0 = a.c0.dbl().dbl().dbl() + a.c0;
  const Fq t1 = a.c1.dbl().dbl().dbl() + a.c1;
  return {t0 - a.c1, a.c0 + t1};
}
/// The conjugate c0 − c1·u, which is also a^q (Frobenius on Fq2).
inline Fq2 fq2_conj(const Fq2& a) { return {a.c0, -a.c1}; }
/// a·k for k in Fq: 2 multiplications.
inline Fq2 fq2_scale(const Fq2& a, const Fq& k) { return {a.c0 * k, a.c1 * k}; }
/// a^e for a canonical 256-bit exponent e (square-and-multiply).
Fq2 fq2_pow(const Fq2& a, const U256& e);

/// Fq6 = Fq2[v]/(v³ − ξ): c0 + c1·v + c2·v².
struct Fq6 {
  Fq2 c0, c1, c2;

  static Fq6 zero() { return {Fq2::zero(), Fq2::zero(), Fq2::zero()}; }
  static Fq6 one() { return {Fq2::one(), Fq2::zero(), Fq2::zero()}; }
  bool is_zero() const { return c0.is_zero() && c1.is_zero() && c2.is_zero(); }
  bool operator==(const Fq6& o) const { return c0 == o.c0 && c1 == o.c1 && c2 == o.c2; }

  friend Fq6 operator+(const Fq6& a, const Fq6& b) { return {a.c0 + b.c0, a.c1 + b.c1, a.c2 + b.c2}; }
  friend Fq6 operator-(const Fq6& a, const Fq6& b) { return {a.c0 - b.c0, a.c1 - b.c1, a.c2 - b.c2}; }
  Fq6 operator-() const { return {-c0, -c1, -c2}; }
  /// Karatsuba over Fq2: 6 Fq2 multiplications.
  friend Fq6 operator*(const Fq6& a, const Fq6& b);
  /// Chung–Hasan SQR2: 2 Fq2 multiplications and 3 squarings.
  Fq6 sqr() const;
  /// 1/a by the adjugate: one Fq2 inversion; inverse of 0 is 0.
  Fq6 inv() const;
  /// a·v = ξ·c2 + c0·v + c1·v² (v is Fq12's non-residue over Fq6).
  Fq6 mul_by_v() const { return {fq2_mul_by_xi(c2), c0, c1}; }
  /// a·(b0 + b1·v): 5 Fq2 multiplications (the sparse factor of a line).
  Fq6 mul_by_01(const Fq2& b0, const Fq2& b1) const;
  /// a·k for k in Fq2: 3 Fq2 multiplications.
  Fq6 scale(const Fq2& k) const { return {c0 * k, c1 * k, c2 * k}; }
};

/// Fq12 = Fq6[w]/(w² − v): c0 + c1·w. The pairing's target group GT is its
/// subgroup of order r.
struct Fq12 {
  Fq6 c0, c1;

  static Fq12 one() { return {Fq6::one(), Fq6::zero()}; }
  static Fq12 zero() { return {Fq6::zero(), Fq6::zero()}; }
  bool is_one() const { return *this == one(); }
  bool operator==(const Fq12& o) const { return c0 == o.c0 && c1 == o.c1; }
  bool operator!=(const Fq12& o) const { return !(*this == o); }

  /// Karatsuba over Fq6: 3 Fq6 multiplications (54 Fq multiplications).
  friend Fq12 operator*(const Fq12& a, const Fq12& b);
  Fq12& operator*=(const Fq12& o) { return *this = *this * o; }
  /// Complex squaring: 2 Fq6 multiplications.
  Fq12 sqr() const;
  /// 1/a = (c0 − c1·w)/(c0² − v·c1²); inverse of 0 is 0.
  Fq12 inv() const;
  /// c0 − c1·w = a^(q⁶); in the cyclotomic subgroup (after the easy part of
  /// the final exponentiation, so in GT too) it is the inverse.
  Fq12 conj() const { return {c0, -c1}; }
  /// a^(q^k) for k = 1, 2, 3: coefficient-wise (conjugation for odd k) times
  /// the constants ξ^(i·(q^k − 1)/6).
  Fq12 frobenius(int k) const;
  /// a·(d0 + d3·w + d4·w³), the shape of a D-type twist's line: 13 Fq2
  /// multiplications instead of 18 (the "034" sparse product of arkworks).
  Fq12 mul_by_034(const Fq2& d0, const Fq2& d3, const Fq2& d4) const;
  /// a² for a in the cyclotomic subgroup (a^(q⁴−q²+1) = 1, where the easy
  /// part of the final exponentiation lands): Granger–Scott, 6 Fq2 squarings.
  /// Wrong for other elements.
  Fq12 cyclotomic_sqr() const;
  /// a^x for the BN parameter x = 4965661367192848881, a cyclotomic:
  /// 62 cyclotomic squarings, 23 multiplications (x's NAF digits; binary: 27).
  Fq12 cyclotomic_exp_x() const;
  /// a^e for any a and a canonical 256-bit exponent e (tests, not hot).
  Fq12 pow(const U256& e) const;
};

/// The BN parameter x: q = 36x⁴ + 36x³ + 24x² + 6x + 1, r = 36x⁴ + 36x³ + 18x² + 6x + 1.
inline constexpr uint64_t kBnX = 4965661367192848881ULL;

/// An integer in non-adjacent form: digits −1, 0, 1, least significant first,
/// no two adjacent digits non-zero, so fewer non-zero digits than binary
/// (fewer multiplications in an exponentiation, additions in a Miller loop).
struct Naf {
  int8_t d[130] = {};
  int len = 0;
};
constexpr Naf to_naf(unsigned __int128 k) {
  Naf n;
  while (k != 0) {
    int8_t z = 0;
    if (k & 1) {
      z = int8_t(2 - int(k & 3));  // k ≡ 1 (mod 4) → 1, k ≡ 3 → −1: then the next bit is 0
      if (z == 1) k -= 1;
      else k += 1;
    }
    n.d[n.len++] = z;
    k >>= 1;
  }
  return n;
}

/// Constants of the Frobenius maps, computed once (thread-safe static):
/// gamma[k−1][i] = ξ^(i·(q^k − 1)/6) for k = 1, 2, 3 and i = 0..5.
struct FrobeniusConstants {
  Fq2 gamma[3][6];
};
const FrobeniusConstants& frobenius_constants();

}  // namespace zkfarm
