#pragma once
// The BN254 optimal ate pairing e: G1 × G2 → GT ⊂ Fq12* (Vercauteren,
// "Optimal pairings", IEEE Trans. Inf. Theory 56(1), 2010; the pairing of
// EIP-197's precompile):
//   e(P, Q) = (f_{6x+2,Q}(P) · l_{[6x+2]Q, π(Q)}(P) · l_{[6x+2]Q+π(Q), −π²(Q)}(P))^((q¹²−1)/r)
// with x = 4965661367192848881, G2 on the D-type sextic twist y² = x³ + 3/ξ
// mapped into E(Fq12) by (x, y) ↦ (x·w², y·w³).
//  - Miller loop: 6x+2 in non-adjacent form, the twist point in homogeneous
//    projective coordinates, lines from Costello, Lange, Naehrig, "Faster
//    pairing computations on curves with high-degree twists" (PKC 2010,
//    eprint 2009/615), as arkworks' ark-ec `bn` module arranges them. Line
//    values are only known up to a factor in Fq2, which the final
//    exponentiation removes.
//  - Final exponentiation: the easy part f^((q⁶−1)(q²+1)), then the hard part
//    (q⁴ − q² + 1)/r by the addition chain of Scott, Benger, Charlemagne,
//    Dominguez Perez, Kachisa, "On the final exponentiation for calculating
//    pairings on ordinary elliptic curves" (Pairing 2009, eprint 2008/490, §5),
//    as go-ethereum's crypto/bn256/cloudflare uses it. It gives exactly
//    (q¹²−1)/r, so values match tests/vectors/bn254_ref.py's plain pairing.
//    snarkjs (ffjavascript) computes e^m, m = 2x(6x²+3x+1), instead (Fuentes-
//    Castañeda, Knapp, Rodríguez-Henríquez, SAC 2011): the same test, another
//    GT value.
// Not constant time: every input is public (verification keys and proofs).
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include "groth16/bn254.hpp"
#include "groth16/fq12.hpp"

namespace zkfarm {

/// One line of the Miller loop, as a function of P: l(P) = c0·y_P + c3·x_P·w + c4·w³.
struct LineCoeffs {
  Fq2 c0, c3, c4;
};

/// 6x+2 in non-adjacent form, the Miller loop's schedule: 66 digits (the top
/// one 1), 21 non-zero below the top (binary would have 26).
inline constexpr Naf kAteNaf = to_naf((unsigned __int128)kBnX * 6 + 2);
constexpr size_t ate_line_count() {
  size_t n = 2 + size_t(kAteNaf.len - 1);  // a doubling per digit below the top, the 2 Frobenius lines
  for (int i = 0; i + 1 < kAteNaf.len; ++i) n += kAteNaf.d[i] != 0;  // an addition per non-zero digit
  return n;
}
/// Lines of one prepared G2 point.
inline constexpr size_t kAteLines = ate_line_count();
static_assert(kAteNaf.len == 66 && kAteLines == 88, "6x+2 = 29793968203157093288 has a 66-digit NAF, 21 non-zero");

/// A G2 point with its Miller-loop lines precomputed (88 × 192 bytes). The lines
/// do not depend on P, so a fixed point (a verification key's β, γ, δ) is
/// prepared once and used for every proof. No allocation.
struct G2Prepared {
  std::array<LineCoeffs, kAteLines> lines;
  bool infinity = true;

  G2Prepared() = default;
  /// Precondition: q is on the twist and in G2 (g2_in_subgroup); otherwise the
  /// lines are defined but the pairing they give means nothing.
  explicit G2Prepared(const G2Affine& q);
};

/// One factor of a multi-pairing: P (affine G1, on the curve) and a prepared Q.
struct PairingTerm {
  G1Affine p;
  const G2Prepared* q;
};

/// Π f_i, the product of the Miller loops of every (P_i, Q_i), sharing the
/// squarings; terms with P or Q at infinity contribute 1. Not yet in GT: apply
/// final_exponentiation. Preconditions as G2Prepared's, and P on the curve.
Fq12 miller_loop(std::span<const PairingTerm> terms);

/// f^((q¹²−1)/r): lands in GT. f must be non-zero (Miller loops never give 0).
Fq12 final_exponentiation(const Fq12& f);

/// e(P, Q). P on G1 (any point of the curve: G1's cofactor is 1), Q in G2;
/// infinity on either side gives 1.
Fq12 pairing(const G1Affine& p, const G2Affine& q);

/// Π e(P_i, Q_i) with one final exponentiation. p and q have the same length.
/// Throws std::invalid_argument when they do not.
Fq12 multi_pairing(std::span<const G1Affine> p, std::span<const G2Affine> q);

/// Whether q (on the twist: check on_curve first) lies in G2, the subgroup of
/// order r, i.e. [r]q = O, tested with one 63-bit scalar multiplication and
/// the endomorphism ψ (Dai, Lin, Zhao, Zhou, eprint 2022/348). The twist's
/// cofactor is about q, so points of the curve off G2 are easy to make, and
/// the pairing means nothing for them.
bool g2_in_subgroup(const G2Affine& q);

}  // namespace zkfarm
