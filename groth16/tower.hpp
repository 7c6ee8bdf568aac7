#pragma once
// The extension tower above a curve's Fq2 (fp2.hpp), for the pairing, one
// template for every curve C (curve traits: C::Fq, C::Fq2, C::kXiC0, C::kX):
//   Fq6  = Fq2[v]/(v³ − ξ), ξ = C::kXiC0 + u   (c0 + c1·v + c2·v²)
//   Fq12 = Fq6[w]/(w² − v)                      (c0 + c1·w)
// so w⁶ = ξ. BN254 (ξ = 9 + u) is the tower of EIP-197, go-ethereum's bn256,
// arkworks' ark-bn254 and ffjavascript's bn128; BLS12-381 (ξ = 1 + u) that of
// the IETF draft, zkcrypto's bls12_381 and ffjavascript's bls12381. In both,
// snarkjs's vk_alphabeta_12 lists c0.c0.c0, c0.c0.c1, c0.c1.c0, …, c1.c2.c1 in
// this order. All coordinates are Montgomery Fq.
// Formulas: Fq6 multiplication and squaring from Devegili, Ó hÉigeartaigh,
// Scott, Dahab, "Multiplication and squaring on pairing-friendly fields"
// (eprint 2006/471: Karatsuba, and Chung–Hasan's SQR2); Fq12 squaring in the
// cyclotomic subgroup from Granger, Scott, "Faster squaring in the cyclotomic
// subgroup of sixth degree extensions" (PKC 2010, eprint 2009/565, §3.1).
// Not constant time: every input is public (verification keys and proofs).
#include <cstddef>
#include <cstdint>

#include "groth16/field.hpp"
#include "groth16/fp2.hpp"

namespace zkfarm {

/// The conjugate c0 − c1·u, which is also a^q (Frobenius on Fq2).
template <class F>
Fp2<F> fq2_conj(const Fp2<F>& a) {
  return {a.c0, -a.c1};
}
/// a·k for k in the base field: 2 multiplications.
template <class F>
Fp2<F> fq2_scale(const Fp2<F>& a, const F& k) {
  return {a.c0 * k, a.c1 * k};
}
/// a^e for a canonical exponent e of M limbs (square-and-multiply).
template <class F, size_t M>
Fp2<F> fq2_pow(const Fp2<F>& a, const Limbs<M>& e) {
  Fp2<F> r = Fp2<F>::one();
  for (int i = int(64 * M) - 1; i >= 0; --i) {
    r = r.sqr();
    if ((e[i / 64] >> (i % 64)) & 1) r *= a;
  }
  return r;
}

/// k·a for a small constant k, by doublings and additions (no multiplication).
template <uint64_t K, class F>
F mul_small(const F& a) {
  static_assert(K > 0);
  F r = a;
  for (int i = 62 - __builtin_clzll(K); i >= 0; --i) {
    r = r.dbl();
    if ((K >> i) & 1) r = r + a;
  }
  return r;
}

/// a·ξ with ξ = k + u (k = C::kXiC0): (k·a0 − a1) + (a0 + k·a1)·u, additions only.
template <class C>
typename C::Fq2 fq2_mul_by_xi(const typename C::Fq2& a) {
  return {mul_small<C::kXiC0>(a.c0) - a.c1, a.c0 + mul_small<C::kXiC0>(a.c1)};
}

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

/// Fq6 = Fq2[v]/(v³ − ξ): c0 + c1·v + c2·v².
template <class C>
struct Fq6Of {
  using Fq2 = typename C::Fq2;
  Fq2 c0, c1, c2;

  static Fq6Of zero() { return {Fq2::zero(), Fq2::zero(), Fq2::zero()}; }
  static Fq6Of one() { return {Fq2::one(), Fq2::zero(), Fq2::zero()}; }
  bool is_zero() const { return c0.is_zero() && c1.is_zero() && c2.is_zero(); }
  bool operator==(const Fq6Of& o) const { return c0 == o.c0 && c1 == o.c1 && c2 == o.c2; }
  bool operator!=(const Fq6Of& o) const { return !(*this == o); }

  friend Fq6Of operator+(const Fq6Of& a, const Fq6Of& b) { return {a.c0 + b.c0, a.c1 + b.c1, a.c2 + b.c2}; }
  friend Fq6Of operator-(const Fq6Of& a, const Fq6Of& b) { return {a.c0 - b.c0, a.c1 - b.c1, a.c2 - b.c2}; }
  Fq6Of operator-() const { return {-c0, -c1, -c2}; }
  static Fq2 xi(const Fq2& a) { return fq2_mul_by_xi<C>(a); }

  /// Karatsuba over Fq2 with v³ = ξ: 6 Fq2 multiplications.
  friend Fq6Of operator*(const Fq6Of& a, const Fq6Of& b) {
    const Fq2 v0 = a.c0 * b.c0, v1 = a.c1 * b.c1, v2 = a.c2 * b.c2;
    return {xi((a.c1 + a.c2) * (b.c1 + b.c2) - v1 - v2) + v0, (a.c0 + a.c1) * (b.c0 + b.c1) - v0 - v1 + xi(v2),
            (a.c0 + a.c2) * (b.c0 + b.c2) - v0 - v2 + v1};
  }
  /// Chung–Hasan SQR2: 2 Fq2 multiplications and 3 squarings.
  Fq6Of sqr() const {
    // (c0 + c1 v + c2 v²)² = (c0² + 2ξ c1c2) + (2c0c1 + ξ c2²) v + (c1² + 2c0c2) v²,
    // the v² term as s1 + s2 + s3 − s0 − s4 with s2 = (c0 − c1 + c2)².
    const Fq2 s0 = c0.sqr(), s1 = (c0 * c1).dbl(), s2 = (c0 - c1 + c2).sqr(), s3 = (c1 * c2).dbl(), s4 = c2.sqr();
    return {xi(s3) + s0, xi(s4) + s1, s1 + s2 + s3 - s0 - s4};
  }
  /// 1/a by the adjugate: one Fq2 inversion; inverse of 0 is 0.
  Fq6Of inv() const {
    // The adjugate t with a·t = d in Fq2: t0 = c0² − ξc1c2, t1 = ξc2² − c0c1,
    // t2 = c1² − c0c2, d = c0t0 + ξ(c2t1 + c1t2).
    const Fq2 t0 = c0.sqr() - xi(c1 * c2);
    const Fq2 t1 = xi(c2.sqr()) - c0 * c1;
    const Fq2 t2 = c1.sqr() - c0 * c2;
    const Fq2 d = (c0 * t0 + xi(c2 * t1 + c1 * t2)).inv();
    return {t0 * d, t1 * d, t2 * d};
  }
  /// a·v = ξ·c2 + c0·v + c1·v² (v is Fq12's non-residue over Fq6).
  Fq6Of mul_by_v() const { return {xi(c2), c0, c1}; }
  /// a·(b0 + b1·v): 5 Fq2 multiplications (the sparse factor of a line).
  Fq6Of mul_by_01(const Fq2& b0, const Fq2& b1) const {
    // The Karatsuba product above with b2 = 0.
    const Fq2 v0 = c0 * b0, v1 = c1 * b1;
    return {xi((c1 + c2) * b1 - v1) + v0, (c0 + c1) * (b0 + b1) - v0 - v1, (c0 + c2) * b0 - v0 + v1};
  }
  /// a·(b1·v) = ξ·c2·b1 + c0·b1·v + c1·b1·v²: 3 Fq2 multiplications.
  Fq6Of mul_by_1(const Fq2& b1) const { return {xi(c2 * b1), c0 * b1, c1 * b1}; }
  /// a·k for k in Fq2: 3 Fq2 multiplications.
  Fq6Of scale(const Fq2& k) const { return {c0 * k, c1 * k, c2 * k}; }
};

template <class C>
struct Fq12Of;

/// Constants of the Frobenius maps of C's tower, computed once (thread-safe
/// static): gamma[k−1][i] = ξ^(i·(q^k − 1)/6) for k = 1, 2, 3 and i = 0..5.
template <class C>
struct FrobeniusConstantsOf {
  typename C::Fq2 gamma[3][6];
};
template <class C>
const FrobeniusConstantsOf<C>& frobenius_constants_of() {
  using Fq = typename C::Fq;
  using Fq2 = typename C::Fq2;
  static const FrobeniusConstantsOf<C> k = [] {
    // (q − 1)/6 by long division: 6 divides q − 1 on BN and BLS12 curves
    // (q ≡ 1 mod 3 and q odd).
    typename Fq::Int e = Fq::modulus();
    e[0] -= 1;
    unsigned __int128 rem = 0;
    for (int i = int(Fq::N) - 1; i >= 0; --i) {
      const unsigned __int128 cur = (rem << 64) | e[i];
      e[i] = uint64_t(cur / 6);
      rem = cur % 6;
    }
    FrobeniusConstantsOf<C> c;
    const Fq2 g = fq2_pow(fq2_mul_by_xi<C>(Fq2::one()), e);  // ξ^((q−1)/6)
    Fq2 gi = Fq2::one();
    for (int i = 0; i < 6; ++i) {
      // (q² − 1)/6 = (q − 1)/6 · (q + 1), and y^q = ȳ on Fq2, so ξ^(i(q²−1)/6) = g_i·ḡ_i;
      // (q³ − 1)/6 = (q − 1)/6 · (q² + q + 1), so ξ^(i(q³−1)/6) = g_i·ḡ_i·g_i.
      c.gamma[0][i] = gi;
      c.gamma[1][i] = gi * fq2_conj(gi);
      c.gamma[2][i] = c.gamma[1][i] * gi;
      gi *= g;
    }
    return c;
  }();
  return k;
}

/// Fq12 = Fq6[w]/(w² − v): c0 + c1·w. The pairing's target group GT is its
/// subgroup of order r.
template <class C>
struct Fq12Of {
  using Fq2 = typename C::Fq2;
  using Fq6 = Fq6Of<C>;
  Fq6 c0, c1;

  static Fq12Of one() { return {Fq6::one(), Fq6::zero()}; }
  static Fq12Of zero() { return {Fq6::zero(), Fq6::zero()}; }
  bool is_one() const { return *this == one(); }
  bool operator==(const Fq12Of& o) const { return c0 == o.c0 && c1 == o.c1; }
  bool operator!=(const Fq12Of& o) const { return !(*this == o); }

  /// Karatsuba over Fq6: 3 Fq6 multiplications (54 Fq multiplications).
  friend Fq12Of operator*(const Fq12Of& a, const Fq12Of& b) {
    const Fq6 aa = a.c0 * b.c0, bb = a.c1 * b.c1;
    return {aa + bb.mul_by_v(), (a.c0 + a.c1) * (b.c0 + b.c1) - aa - bb};
  }
  Fq12Of& operator*=(const Fq12Of& o) { return *this = *this * o; }
  /// Complex squaring: 2 Fq6 multiplications.
  Fq12Of sqr() const {
    // (c0 + c1 w)² = (c0² + v c1²) + 2c0c1 w, with c0² + v c1² = (c0 + c1)(c0 + v c1) − c0c1 − v c0c1.
    const Fq6 ab = c0 * c1;
    return {(c0 + c1) * (c0 + c1.mul_by_v()) - ab - ab.mul_by_v(), ab + ab};
  }
  /// 1/a = (c0 − c1·w)/(c0² − v·c1²); inverse of 0 is 0.
  Fq12Of inv() const {
    const Fq6 t = (c0.sqr() - c1.sqr().mul_by_v()).inv();
    return {c0 * t, -(c1 * t)};
  }
  /// c0 − c1·w = a^(q⁶) (w^(q⁶) = −w); in the cyclotomic subgroup (after the
  /// easy part of the final exponentiation, so in GT too) it is the inverse.
  Fq12Of conj() const { return {c0, -c1}; }
  /// a^(q^k) for k = 1, 2, 3: coefficient-wise (conjugation for odd k) times
  /// the constants ξ^(i·(q^k − 1)/6).
  Fq12Of frobenius(int k) const {
    // a = Σ g_i w^i (c0 holds i = 0, 2, 4 and c1 holds i = 1, 3, 5), and
    // (g w^i)^(q^k) = g^(q^k) · w^i · ξ^(i(q^k − 1)/6) since w⁶ = ξ; g^(q^k) is g
    // conjugated for odd k.
    const Fq2* g = frobenius_constants_of<C>().gamma[k - 1];
    auto f = [k](const Fq2& x) { return (k & 1) ? fq2_conj(x) : x; };
    return {{f(c0.c0), f(c0.c1) * g[2], f(c0.c2) * g[4]}, {f(c1.c0) * g[1], f(c1.c1) * g[3], f(c1.c2) * g[5]}};
  }
  /// a·(d0 + d3·w + d4·w³), the shape of a D-type twist's line: 13 Fq2
  /// multiplications instead of 18 (the "034" sparse product of arkworks).
  Fq12Of mul_by_034(const Fq2& d0, const Fq2& d3, const Fq2& d4) const {
    // The line is L = L0 + L1 w with L0 = (d0, 0, 0) and L1 = (d3, d4, 0) (w³ = v·w);
    // Karatsuba: a·L = (c0 L0 + v c1 L1) + ((c0 + c1)(L0 + L1) − c0 L0 − c1 L1) w.
    const Fq6 a = c0.scale(d0);
    const Fq6 b = c1.mul_by_01(d3, d4);
    const Fq6 e = (c0 + c1).mul_by_01(d0 + d3, d4);
    return {a + b.mul_by_v(), e - a - b};
  }
  /// a·(d0 + d1·w² + d4·w³), the shape of an M-type twist's line (the "014"
  /// sparse product of arkworks, w² = v, w³ = v·w).
  Fq12Of mul_by_014(const Fq2& d0, const Fq2& d1, const Fq2& d4) const {
    // L = L0 + L1 w with L0 = (d0, d1, 0) and L1 = (0, d4, 0); Karatsuba as above.
    const Fq6 a = c0.mul_by_01(d0, d1);
    const Fq6 b = c1.mul_by_1(d4);
    const Fq6 e = (c0 + c1).mul_by_01(d0, d1 + d4);
    return {a + b.mul_by_v(), e - a - b};
  }
  /// a² for a in the cyclotomic subgroup (a^(q⁴−q²+1) = 1, where the easy
  /// part of the final exponentiation lands): Granger–Scott, 6 Fq2 squarings.
  /// Wrong for other elements.
  Fq12Of cyclotomic_sqr() const {
    // Granger–Scott §3.1: view Fq12 as Fq4[t]/(t³ − s), Fq4 = Fq2[s]/(s² − ξ), s = w³,
    // t = w: a = A + B t + C t² with A = g0 + g3 s, B = g1 + g4 s, C = g2 + g5 s
    // (g_i the coefficient of w^i). In the cyclotomic subgroup
    //   a² = (3A² − 2Ā) + (3 s C² + 2B̄) t + (3B² − 2C̄) t², x̄ = x with s → −s.
    auto fq4_sqr = [](const Fq2& x0, const Fq2& x1, Fq2& r0, Fq2& r1) {
      // (x0 + x1 s)² = (x0² + ξ x1²) + 2 x0 x1 s.
      const Fq2 p = x0 * x1;
      r0 = (x0 + x1) * (x0 + Fq6::xi(x1)) - p - Fq6::xi(p);
      r1 = p.dbl();
    };
    const Fq2 &g0 = c0.c0, &g2 = c0.c1, &g4 = c0.c2, &g1 = c1.c0, &g3 = c1.c1, &g5 = c1.c2;
    Fq2 a0, a1, b0, b1, s0, s1;
    fq4_sqr(g0, g3, a0, a1);  // A²
    fq4_sqr(g1, g4, b0, b1);  // B²
    fq4_sqr(g2, g5, s0, s1);  // C²
    auto three_minus_two = [](const Fq2& t, const Fq2& z) { return (t - z).dbl() + t; };  // 3t − 2z
    auto three_plus_two = [](const Fq2& t, const Fq2& z) { return (t + z).dbl() + t; };   // 3t + 2z
    Fq12Of r;
    r.c0.c0 = three_minus_two(a0, g0);              // g0' = 3·A²_0 − 2 g0
    r.c1.c1 = three_plus_two(a1, g3);               // g3' = 3·A²_1 + 2 g3
    r.c1.c0 = three_plus_two(Fq6::xi(s1), g1);      // g1' = 3·ξ·C²_1 + 2 g1  (s·C² = ξ C²_1 + C²_0 s)
    r.c0.c2 = three_minus_two(s0, g4);              // g4' = 3·C²_0 − 2 g4
    r.c0.c1 = three_minus_two(b0, g2);              // g2' = 3·B²_0 − 2 g2
    r.c1.c2 = three_plus_two(b1, g5);               // g5' = 3·B²_1 + 2 g5
    return r;
  }
  /// a^|x| for the curve's parameter x (C::kX), a cyclotomic: cyclotomic
  /// squarings and a multiplication per non-zero NAF digit (BN254: 62 and 23).
  Fq12Of cyclotomic_exp_x() const {
    static constexpr Naf kXNaf = to_naf(C::kX);
    const Fq12Of inverse = conj();
    Fq12Of r = *this;  // top digit is 1
    for (int i = kXNaf.len - 2; i >= 0; --i) {
      r = r.cyclotomic_sqr();
      if (kXNaf.d[i] == 1) r *= *this;
      else if (kXNaf.d[i] == -1) r *= inverse;
    }
    return r;
  }
  /// a^e for any a and a canonical exponent e of M limbs (square-and-multiply,
  /// high bit first; tests and BLS12's hard part).
  template <size_t M>
  Fq12Of pow(const Limbs<M>& e) const {
    Fq12Of r = one();
    for (int i = int(64 * M) - 1; i >= 0; --i) {
      r = r.sqr();
      if ((e[i / 64] >> (i % 64)) & 1) r *= *this;
    }
    return r;
  }
};

}  // namespace zkfarm
