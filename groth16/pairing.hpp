#pragma once
// The optimal ate pairing e: G1 × G2 → GT ⊂ Fq12* of a curve C (curve traits:
// BN254's Bn254, BLS12-381's bls12_381::Curve), one implementation for both
// (Vercauteren, "Optimal pairings", IEEE Trans. Inf. Theory 56(1), 2010):
//   BN (C::kPairingFamily = bn; EIP-197's precompile):
//     e(P, Q) = (f_{6x+2,Q}(P) · l_{[6x+2]Q, π(Q)}(P) · l_{[6x+2]Q+π(Q), −π²(Q)}(P))^((q¹²−1)/r)
//   BLS12 (bls12; draft-irtf-cfrg-pairing-friendly-curves-11 §4.2.1):
//     e(P, Q) = f_{x,Q}(P)^((q¹²−1)/r)
// with the curve's x (C::kX = |x|, C::kXNegative), G2 on the sextic twist
// (C::kTwist: D-type y² = x³ + b/ξ mapped by (x, y) ↦ (x·w², y·w³), BN254's;
// M-type y² = x³ + b·ξ by (x/w², y/w³), BLS12-381's), the tower of tower.hpp.
//  - Miller loop: the loop count in non-adjacent form, the twist point in
//    homogeneous projective coordinates, lines from Costello, Lange, Naehrig,
//    "Faster pairing computations on curves with high-degree twists" (PKC
//    2010, eprint 2009/615), as arkworks' ark-ec `bn` and `bls12` modules
//    arrange them; the same three coefficients for both twists, placed in
//    Fq12 by the twist type. Line values are only known up to a factor in
//    Fq2, and vertical lines lie in Fq6: the final exponentiation removes
//    both. For x < 0, f_{x,Q} = 1/f_{|x|,Q} up to a vertical line, and 1/f
//    has the image of f̄ = f^(q⁶) in GT (q⁶ ≡ −1 mod r): the loop ends f ← f̄.
//  - Final exponentiation: the easy part f^((q⁶−1)(q²+1)), then the hard part
//    (q⁴ − q² + 1)/r. BN: the addition chain of Scott, Benger, Charlemagne,
//    Dominguez Perez, Kachisa, "On the final exponentiation for calculating
//    pairings on ordinary elliptic curves" (Pairing 2009, eprint 2008/490,
//    §5), as go-ethereum's crypto/bn256/cloudflare uses it. BLS12: plain
//    square-and-multiply by C::kHardExponent. Both give exactly (q¹²−1)/r, so
//    values equal the plain Python pairings of tests/vectors/ (bn254_ref.py,
//    bls12_381_pairing_ref.py). snarkjs (ffjavascript) computes other powers
//    of e (BN: e^m, m = 2x(6x²+3x+1); BLS12: e³, Hayashida, Hayasaka, Teruya,
//    eprint 2020/875): the same product-is-one test, another GT value.
// Not constant time: every input is public (verification keys and proofs).
// The templates are instantiated for every curve of Curves in pairing.cpp.
// Below them, each curve's names as before the merge (BN254's in zkfarm::,
// BLS12-381's in zkfarm::bls12_381::).
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>

#include "groth16/bls12_381.hpp"
#include "groth16/bn254.hpp"
#include "groth16/tower.hpp"

namespace zkfarm {

/// One line of the Miller loop as a function of P, l(P) = y·y_P + x·x_P·w +
/// c·w³ on a D-type twist and c + x·x_P·w² + y·y_P·w³ on an M-type one.
template <class C>
struct LineCoeffsOf {
  typename C::Fq2 y, x, c;
};

/// The Miller loop's count in non-adjacent form: 6x+2 for BN, |x| for BLS12.
template <class C>
constexpr Naf ate_naf() {
  if constexpr (C::kPairingFamily == PairingFamily::bn) return to_naf((unsigned __int128)C::kX * 6 + 2);
  else return to_naf(C::kX);
}
/// Lines of one prepared G2 point: a doubling per digit below the top, an
/// addition per non-zero one, and BN's 2 Frobenius lines.
template <class C>
constexpr size_t ate_line_count() {
  constexpr Naf naf = ate_naf<C>();
  size_t n = size_t(naf.len - 1) + (C::kPairingFamily == PairingFamily::bn ? 2 : 0);
  for (int i = 0; i + 1 < naf.len; ++i) n += naf.d[i] != 0;
  return n;
}

/// A G2 point with its Miller-loop lines precomputed (BN254: 88 × 192 bytes).
/// The lines do not depend on P, so a fixed point (a verification key's β, γ,
/// δ) is prepared once and used for every proof. No allocation.
template <class C>
struct G2PreparedOf {
  std::array<LineCoeffsOf<C>, ate_line_count<C>()> lines;
  bool infinity = true;

  G2PreparedOf() = default;
  /// Precondition: q is on the twist and in G2 (g2_in_subgroup); otherwise the
  /// lines are defined but the pairing they give means nothing.
  explicit G2PreparedOf(const Affine<typename C::G2Params>& q);
};

/// One factor of a multi-pairing: P (affine G1, on the curve) and a prepared Q.
template <class C>
struct PairingTermOf {
  Affine<typename C::G1Params> p;
  const G2PreparedOf<C>* q;
};

/// Π f_i, the product of the Miller loops of every (P_i, Q_i), sharing the
/// squarings; terms with P or Q at infinity (or a null Q) contribute 1. Not
/// yet in GT: apply final_exponentiation_of. Preconditions as G2PreparedOf's,
/// and P on the curve (and in G1 where its cofactor is not 1).
template <class C>
Fq12Of<C> miller_loop_of(std::span<const PairingTermOf<C>> terms);

/// f^((q¹²−1)/r): lands in GT. A zero f (never a Miller loop's) gives 0.
template <class C>
Fq12Of<C> final_exponentiation_of(const Fq12Of<C>& f);

/// e(P, Q) for P in G1 and Q in G2 (preconditions as miller_loop_of's);
/// infinity on either side gives 1.
template <class C>
Fq12Of<C> pairing_of(const Affine<typename C::G1Params>& p, const Affine<typename C::G2Params>& q);

/// Whether p is in G1: on the curve and, where G1's cofactor is not 1
/// (C::kG1CofactorIsOne), [r]p = O by a plain scalar multiplication.
/// Infinity is.
template <class C>
bool g1_in_subgroup_of(const Affine<typename C::G1Params>& p);

/// Whether q is in G2, the subgroup of order r of the twist, i.e. [r]q = O.
/// The twist's cofactor is large on both curves (about q on BN254, 2⁵⁰⁸ on
/// BLS12-381), so points of the twist off G2 are easy to make, and the
/// pairing means nothing for them. BN: one scalar multiplication by x and the
/// endomorphism ψ (Dai, Lin, Zhao, Zhou, eprint 2022/348); the caller checks
/// on_curve first. BLS12: on the twist and [r]q = O, plainly. Infinity is.
template <class C>
bool g2_in_subgroup_of(const Affine<typename C::G2Params>& q);

// ---- BN254's names (zkfarm::) ----

using Fq6 = Fq6Of<Bn254>;
using Fq12 = Fq12Of<Bn254>;
using LineCoeffs = LineCoeffsOf<Bn254>;
using G2Prepared = G2PreparedOf<Bn254>;
using PairingTerm = PairingTermOf<Bn254>;
using FrobeniusConstants = FrobeniusConstantsOf<Bn254>;
inline const FrobeniusConstants& frobenius_constants() { return frobenius_constants_of<Bn254>(); }

/// The BN parameter x (Bn254::kX).
inline constexpr uint64_t kBnX = Bn254::kX;
/// 6x+2 in non-adjacent form, the Miller loop's schedule: 66 digits (the top
/// one 1), 21 non-zero below the top (binary would have 26).
inline constexpr Naf kAteNaf = ate_naf<Bn254>();
/// Lines of one prepared G2 point.
inline constexpr size_t kAteLines = ate_line_count<Bn254>();
static_assert(kAteNaf.len == 66 && kAteLines == 88, "6x+2 = 29793968203157093288 has a 66-digit NAF, 21 non-zero");

/// See miller_loop_of.
Fq12 miller_loop(std::span<const PairingTerm> terms);
/// See final_exponentiation_of.
Fq12 final_exponentiation(const Fq12& f);
/// e(P, Q). P on G1 (any point of the curve: G1's cofactor is 1), Q in G2;
/// infinity on either side gives 1.
Fq12 pairing(const G1Affine& p, const G2Affine& q);
/// Π e(P_i, Q_i) with one final exponentiation. p and q have the same length.
/// Throws std::invalid_argument when they do not.
Fq12 multi_pairing(std::span<const G1Affine> p, std::span<const G2Affine> q);
/// See g2_in_subgroup_of: [x+1]Q + ψ([x]Q) + ψ²([x]Q) = ψ³([2x]Q), Q on the twist.
bool g2_in_subgroup(const G2Affine& q);

}  // namespace zkfarm

// ---- BLS12-381's names (zkfarm::bls12_381::) ----

namespace zkfarm::bls12_381 {

using Fq6 = Fq6Of<Curve>;
using Fq12 = Fq12Of<Curve>;
/// |x| for the curve's parameter x = −0xd201000000010000 (Curve::kX).
inline constexpr uint64_t kBlsXAbs = Curve::kX;
/// (q⁴ − q² + 1)/r, the hard part of the final exponentiation (Curve::kHardExponent).
inline constexpr Limbs<20> kHardExponent = Curve::kHardExponent;

/// Π f_{x,Q_i}(P_i) over every (P_i, Q_i) (each Q prepared here); terms with P
/// or Q at infinity contribute 1. Preconditions: P on G1's curve, Q in G2,
/// else the value means nothing (it is still computed, no crash).
Fq12 miller_loop(std::span<const std::pair<G1Affine, G2Affine>> terms);
/// See final_exponentiation_of.
Fq12 final_exponentiation(const Fq12& f);
/// e(P, Q) for P in G1 and Q in G2; infinity on either side gives 1.
Fq12 pairing(const G1Affine& p, const G2Affine& q);
/// Whether Π e(P_i, Q_i) = 1, with one final exponentiation: the Groth16 check
/// e(−A, B)·e(α, β)·e(vk_x, γ)·e(C, δ) = 1. The caller checks first that
/// every P_i is in G1 and every Q_i in G2: this function does not.
bool pairing_product_is_one(std::span<const std::pair<G1Affine, G2Affine>> terms);
/// Whether p is in G1: on y² = x³ + 4 and [r]p = O (infinity is). G1's
/// cofactor is (x − 1)²/3 ≈ 2¹²⁶, so points of the curve off G1 are the rule.
bool g1_in_subgroup(const G1Affine& p);
/// Whether q is in G2: on the twist y² = x³ + 4(1 + u) and [r]q = O (infinity is).
bool g2_in_subgroup(const G2Affine& q);

}  // namespace zkfarm::bls12_381
