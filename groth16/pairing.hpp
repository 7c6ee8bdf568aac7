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

/// 6x+2 in non-adjacent form (fewer additions than binary), least significant
/// digit first: 66 digits (top digit 1), 21 non-zero below the top.
struct AteNaf {
  int8_t d[66] = {};
  int len = 0;
  size_t lines = 0;  ///< one per digit below the top (doubling), one per non-zero one (addition), +2
};
constexpr AteNaf make_ate_naf() {
  AteNaf n;
  unsigned __int128 k = (unsigned __int128)kBnX * 6 + 2;
  while (k != 0) {
    int8_t z = 0;
    if (k & 1) {
      z = int8_t(2 - int(k & 3));  // k ≡ 1 (mod 4) → 1, k ≡ 3 → −1: the next bit becomes 0
      if (z == 1) k -= 1; else k += 1;
    }
    n.d[n.len++] = z;
    k >>= 1;
  }
  n.lines = 2 + size_t(n.len - 1);
  for (int i = 0; i + 1 < n.len; ++i) n.lines += n.d[i] != 0;
  return n;
}
inline constexpr AteNaf kAteNaf = make_ate_naf();
/// Lines of one prepared G2 point (88).
inline constexpr size_t kAteLines = kAteNaf.lines;

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
