#pragma once
// The BLS12-381 optimal ate pairing e: G1 × G2 → GT ⊂ Fq12*, for verifying a
// Groth16 proof in process (one multi-pairing per proof: simple and clearly
// correct first, fast enough second: a 4-pair check takes about 20 ms on one core).
//
// Tower (the IETF draft's, zkcrypto's bls12_381 and ffjavascript's bls12381,
// so snarkjs's vk_alphabeta_12 lists coefficients in this order):
//   Fq2  = Fq[u]/(u² + 1)                (bls12_381.hpp)
//   Fq6  = Fq2[v]/(v³ − ξ), ξ = 1 + u    (c0 + c1·v + c2·v²)
//   Fq12 = Fq6[w]/(w² − v)               (c0 + c1·w), so w⁶ = ξ.
// Pairing (Vercauteren, "Optimal pairings", IEEE Trans. Inf. Theory 56(1),
// 2010; draft-irtf-cfrg-pairing-friendly-curves-11 §4.2.1 for x):
//   e(P, Q) = f_{x,Q}(P)^((q¹²−1)/r),  x = −0xd201000000010000.
//  - G2 lives on the M-type twist E': y² = x³ + 4ξ and is mapped into E(Fq12)
//    by ψ(x', y') = (x'/w², y'/w³). The Miller loop runs over |x| with T in
//    affine coordinates on the twist (one Fq2 inversion per step: slower than
//    projective formulas, but each line is the textbook chord or tangent).
//    Since x < 0, f_{x,Q} = 1/(f_{|x|,Q}·v_{[|x|]Q}); the vertical line v lies
//    in a proper subfield, which the final exponentiation kills, and after its
//    easy part 1/f is the conjugate f^(q⁶), so the loop ends with f ← f̄.
//  - Final exponentiation: the easy part f^((q⁶−1)(q²+1)), then the hard part
//    (q⁴ − q² + 1)/r as a plain square-and-multiply by that 1268-bit integer
//    (no addition chain: exactly (q¹²−1)/r, so values equal the plain Python
//    pairing of tests/vectors/bls12_381_pairing_ref.py). snarkjs (ffjavascript)
//    uses the chain of Hayashida, Hayasaka, Teruya (eprint 2020/875), which
//    gives e(P, Q)³ instead: the same product-is-one test, another GT value
//    (the tests check vk_alphabeta_12 = e(α, β)³).
// Not constant time: every input is public (verification keys and proofs).
#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>

#include "groth16/bls12_381.hpp"

namespace zkfarm::bls12_381 {

/// a·ξ with ξ = 1 + u: (a0 − a1) + (a0 + a1)·u, additions only.
inline Fq2 fq2_mul_by_xi(const Fq2& a) { return {a.c0 - a.c1, a.c0 + a.c1}; }
/// The conjugate c0 − c1·u, which is also a^q (Frobenius on Fq2).
inline Fq2 fq2_conj(const Fq2& a) { return {a.c0, -a.c1}; }
/// a·k for k in Fq: 2 multiplications.
inline Fq2 fq2_scale(const Fq2& a, const Fq& k) { return {a.c0 * k, a.c1 * k}; }
/// a^e for a canonical exponent e of M limbs (square-and-multiply).
template <size_t M>
Fq2 fq2_pow(const Fq2& a, const Limbs<M>& e) {
  Fq2 r = Fq2::one();
  for (int i = int(64 * M) - 1; i >= 0; --i) {
    r = r.sqr();
    if ((e[i / 64] >> (i % 64)) & 1) r *= a;
  }
  return r;
}

/// Fq6 = Fq2[v]/(v³ − ξ): c0 + c1·v + c2·v² (288 bytes of Montgomery Fq).
struct Fq6 {
  Fq2 c0, c1, c2;

  static Fq6 zero() { return {Fq2::zero(), Fq2::zero(), Fq2::zero()}; }
  static Fq6 one() { return {Fq2::one(), Fq2::zero(), Fq2::zero()}; }
  bool is_zero() const { return c0.is_zero() && c1.is_zero() && c2.is_zero(); }
  bool operator==(const Fq6& o) const { return c0 == o.c0 && c1 == o.c1 && c2 == o.c2; }
  bool operator!=(const Fq6& o) const { return !(*this == o); }

  friend Fq6 operator+(const Fq6& a, const Fq6& b) { return {a.c0 + b.c0, a.c1 + b.c1, a.c2 + b.c2}; }
  friend Fq6 operator-(const Fq6& a, const Fq6& b) { return {a.c0 - b.c0, a.c1 - b.c1, a.c2 - b.c2}; }
  Fq6 operator-() const { return {-c0, -c1, -c2}; }
  /// Karatsuba over Fq2 (Devegili, Ó hÉigeartaigh, Scott, Dahab, eprint
  /// 2006/471, §4): 6 Fq2 multiplications.
  friend Fq6 operator*(const Fq6& a, const Fq6& b);
  Fq6 sqr() const { return *this * *this; }
  /// 1/a by the adjugate: one Fq2 inversion; inverse of 0 is 0.
  Fq6 inv() const;
  /// a·v = ξ·c2 + c0·v + c1·v² (v is Fq12's non-residue over Fq6).
  Fq6 mul_by_v() const { return {fq2_mul_by_xi(c2), c0, c1}; }
};

/// Fq12 = Fq6[w]/(w² − v): c0 + c1·w (576 bytes). GT is its subgroup of
/// order r. Coefficient order (as pairing.txt and snarkjs's vk_alphabeta_12):
/// c0.c0.c0, c0.c0.c1, c0.c1.c0, …, c1.c2.c1.
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
  /// c0 − c1·w = a^(q⁶) (w^(q⁶) = −w for every a); in the cyclotomic
  /// subgroup (so in GT) it is the inverse.
  Fq12 conj() const { return {c0, -c1}; }
  /// a^(q^k) for k = 1, 2, 3: coefficient-wise (conjugation for odd k) times
  /// the constants ξ^(i·(q^k − 1)/6).
  Fq12 frobenius(int k) const;
  /// a^e for a canonical exponent e of M limbs (square-and-multiply, high bit first).
  template <size_t M>
  Fq12 pow(const Limbs<M>& e) const {
    Fq12 r = one();
    for (int i = int(64 * M) - 1; i >= 0; --i) {
      r = r.sqr();
      if ((e[i / 64] >> (i % 64)) & 1) r *= *this;
    }
    return r;
  }
};

/// |x| for the curve's parameter x = −0xd201000000010000 (64 bits, 6 set):
/// r = x⁴ − x² + 1, q = (x − 1)²(x⁴ − x² + 1)/3 + x.
inline constexpr uint64_t kBlsXAbs = 0xd201000000010000ULL;

/// (q⁴ − q² + 1)/r, the hard part of the final exponentiation (1268 bits),
/// little-endian limbs. Computed with Python integers (the division is exact;
/// the tests check r times this is q⁴ − q² + 1).
inline constexpr Limbs<20> kHardExponent = {
    0xe516c3f438e3ba79ULL, 0xfa9912aae208ccf1ULL, 0x905ce937335d5b68ULL, 0xc71a2629b0dea236ULL,
    0x83774940996754c8ULL, 0x21d160aeb6a1e799ULL, 0x2ed0b283ed237db4ULL, 0x915c97f36c6f1821ULL,
    0x67f17fcbde783765ULL, 0x2378b9039096d1b7ULL, 0x7988f8761bdc51dcULL, 0x2076995003fc77a1ULL,
    0x827eca0ba621315bULL, 0xe5a72bce8d63cb9fULL, 0xf68f7764c28b6f8aULL, 0x2f230063cf081517ULL,
    0x94506632528d6a9aULL, 0xd3cde88eeb996ca3ULL, 0xc0bd38c3195c899eULL, 0x000f686b3d807d01ULL};

/// Π f_{x,Q_i}(P_i), the product of the Miller loops of every (P_i, Q_i),
/// sharing the squarings; terms with P or Q at infinity contribute 1. Not yet
/// in GT: apply final_exponentiation. Preconditions: P on G1's curve, Q in G2
/// (on the twist, order r: g2_in_subgroup), else the value means nothing (it
/// is still computed, no crash: a zero denominator inverts to 0).
Fq12 miller_loop(std::span<const std::pair<G1Affine, G2Affine>> terms);

/// f^((q¹²−1)/r): lands in GT. A zero f (never a Miller loop's) gives 0.
Fq12 final_exponentiation(const Fq12& f);

/// e(P, Q) for P in G1 and Q in G2 (preconditions as miller_loop's);
/// infinity on either side gives 1.
Fq12 pairing(const G1Affine& p, const G2Affine& q);

/// Whether Π e(P_i, Q_i) = 1, with one final exponentiation: the Groth16 check
/// e(−A, B)·e(α, β)·e(vk_x, γ)·e(C, δ) = 1. The caller checks first that
/// every P_i is in G1 and every Q_i in G2 (g1_in_subgroup, g2_in_subgroup):
/// this function does not.
bool pairing_product_is_one(std::span<const std::pair<G1Affine, G2Affine>> terms);

/// Whether p is in G1: on the curve y² = x³ + 4 and [r]p = O (infinity is).
/// G1's cofactor is (x − 1)²/3 ≈ 2¹²⁶, so points of the curve off G1 are the
/// rule, not the exception. A plain 256-bit scalar multiplication by r.
bool g1_in_subgroup(const G1Affine& p);

/// Whether q is in G2: on the twist y² = x³ + 4(1 + u) and [r]q = O (infinity
/// is). The twist's cofactor is about q²/r ≈ 2⁵⁰⁸, as above.
bool g2_in_subgroup(const G2Affine& q);

}  // namespace zkfarm::bls12_381
