#include "groth16/pairing.hpp"

#include <stdexcept>
#include <vector>

namespace zkfarm {

namespace {

// A twist point in homogeneous projective coordinates: (x, y) = (X/Z, Y/Z).
struct Projective {
  Fq2 x, y, z;
};

// T ← 2T and the tangent at T (Costello–Lange–Naehrig 2010, §5, a = 0, with
// b' the twist's constant; checked against the affine formulas in
// tests/vectors/bn254_ref.py). With λ = 3X²/(2YZ) the line through ψ(T) is
// y_P − λ x_P w + (λ x_T − y_T) w³; times 2YZ², and with Y²Z = X³ + b'Z³:
//   2YZ·y_P − 3X²·x_P·w + (Y² − 3b'Z²)·w³.
LineCoeffs double_step(Projective& t, const Fq2& three_b, const Fq& half) {
  const Fq2 a = fq2_scale(t.x * t.y, half);
  const Fq2 b = t.y.sqr(), c = t.z.sqr();
  const Fq2 e = three_b * c;
  const Fq2 f = e.dbl() + e;
  const Fq2 g = fq2_scale(b + f, half);
  const Fq2 h = (t.y + t.z).sqr() - (b + c);  // 2YZ
  const Fq2 j = t.x.sqr();
  const Fq2 ee = e.sqr();
  t.x = a * (b - f);
  t.y = g.sqr() - (ee.dbl() + ee);
  t.z = b * h;
  return {h, -(j.dbl() + j), b - e};
}

// T ← T + Q (Q affine) and the line through T and Q: with θ = Y − y_Q Z,
// λ = X − x_Q Z the slope is θ/λ, and the line times λ is
//   λ·y_P − θ·x_P·w + (θ x_Q − λ y_Q)·w³.
LineCoeffs add_step(Projective& t, const G2Affine& q) {
  const Fq2 theta = t.y - q.y * t.z;
  const Fq2 lambda = t.x - q.x * t.z;
  const Fq2 c = theta.sqr(), d = lambda.sqr();
  const Fq2 e = lambda * d, f = t.z * c, g = t.x * d;
  const Fq2 h = e + f - g.dbl();
  t.y = theta * (g - h) - e * t.y;
  t.x = lambda * h;
  t.z *= e;
  return {lambda, -theta, theta * q.x - lambda * q.y};
}

// π on the twist: untwist, raise the coordinates to q, twist back. With
// ψ(x, y) = (x w², y w³) and w^(q−1) = ξ^((q−1)/6):
//   π(x, y) = (x̄·ξ^((q−1)/3), ȳ·ξ^((q−1)/2)).
G2Affine frobenius_point(const G2Affine& q) {
  const Fq2* g = frobenius_constants().gamma[0];
  return {fq2_conj(q.x) * g[2], fq2_conj(q.y) * g[3]};
}

// The same map on XYZZ coordinates (x = X/ZZ, y = Y/ZZZ): conjugation commutes
// with the division, so X, Y take the constants and ZZ, ZZZ are conjugated.
G2 psi(const G2& p) {
  const Fq2* g = frobenius_constants().gamma[0];
  return {fq2_conj(p.X) * g[2], fq2_conj(p.Y) * g[3], fq2_conj(p.ZZ), fq2_conj(p.ZZZ)};
}

// f ← f · l(P).
inline void apply_line(Fq12& f, const LineCoeffs& l, const G1Affine& p) {
  f = f.mul_by_034(fq2_scale(l.c0, p.y), fq2_scale(l.c3, p.x), l.c4);
}

}  // namespace

G2Prepared::G2Prepared(const G2Affine& q) {
  infinity = q.is_infinity();
  if (infinity) return;
  const Fq2 three_b = G2Params::b().dbl() + G2Params::b();
  const Fq half = Fq::from_u64(2).inv();
  const G2Affine neg_q = -q;
  Projective t{q.x, q.y, Fq2::one()};
  size_t n = 0;
  for (int i = kAteNaf.len - 2; i >= 0; --i) {
    lines[n++] = double_step(t, three_b, half);
    if (kAteNaf.d[i] == 1) lines[n++] = add_step(t, q);
    else if (kAteNaf.d[i] == -1) lines[n++] = add_step(t, neg_q);
  }
  // T = [6x+2]Q now; then T + π(Q), and that plus −π²(Q).
  const G2Affine q1 = frobenius_point(q);
  const G2Affine q2 = frobenius_point(q1);
  lines[n++] = add_step(t, q1);
  lines[n++] = add_step(t, -q2);
}

Fq12 miller_loop(std::span<const PairingTerm> terms) {
  Fq12 f = Fq12::one();
  auto apply = [&](size_t line) {
    for (const PairingTerm& term : terms)
      if (term.q && !term.q->infinity && !term.p.is_infinity()) apply_line(f, term.q->lines[line], term.p);
  };
  size_t n = 0;
  for (int i = kAteNaf.len - 2; i >= 0; --i) {
    if (i != kAteNaf.len - 2) f = f.sqr();  // f is 1 before the first line
    apply(n++);
    if (kAteNaf.d[i] != 0) apply(n++);
  }
  apply(n++);
  apply(n++);
  return f;
}

Fq12 final_exponentiation(const Fq12& f) {
  // Easy part: f^(q⁶−1) = f̄/f, then ^(q²+1). The result t is in the cyclotomic
  // subgroup: its inverse is its conjugate and squarings are Granger–Scott's.
  Fq12 t = f.conj() * f.inv();
  t = t.frobenius(2) * t;

  // Hard part (Scott et al. 2009, §5): (q⁴ − q² + 1)/r = λ0 + λ1 q + λ2 q² + λ3 q³
  // with λ3 = 1, λ2 = 6x² + 1, λ1 = −36x³ − 18x² − 12x + 1,
  // λ0 = −36x³ − 30x² − 18x − 2, computed as y0·y1²·y2⁶·y3¹²·y4¹⁸·y5³⁰·y6³⁶ with
  // the y_i below (t^x = fu, t^x² = fu2, t^x³ = fu3; p-th powers by Frobenius)
  // and a vectorial addition chain for the exponents (1, 2, 6, 12, 18, 30, 36).
  const Fq12 fu = t.cyclotomic_exp_x();
  const Fq12 fu2 = fu.cyclotomic_exp_x();
  const Fq12 fu3 = fu2.cyclotomic_exp_x();
  const Fq12 fp2 = t.frobenius(2);
  const Fq12 y0 = t.frobenius(1) * fp2 * fp2.frobenius(1);   // t^(q + q² + q³)
  const Fq12 y1 = t.conj();                                   // t^−1
  const Fq12 y2 = fu2.frobenius(2);                           // t^(x² q²)
  const Fq12 y3 = fu.frobenius(1).conj();                     // t^(−x q)
  const Fq12 y4 = (fu * fu2.frobenius(1)).conj();             // t^(−x − x² q)
  const Fq12 y5 = fu2.conj();                                 // t^(−x²)
  const Fq12 y6 = (fu3 * fu3.frobenius(1)).conj();            // t^(−x³ − x³ q)
  Fq12 t0 = y6.cyclotomic_sqr() * y4 * y5;
  Fq12 t1 = y3 * y5 * t0;
  t0 = t0 * y2;
  t1 = (t1.cyclotomic_sqr() * t0).cyclotomic_sqr();
  t0 = t1 * y1;
  t1 = t1 * y0;
  return t0.cyclotomic_sqr() * t1;
}

Fq12 pairing(const G1Affine& p, const G2Affine& q) {
  if (p.is_infinity() || q.is_infinity()) return Fq12::one();
  const G2Prepared prepared(q);
  const PairingTerm term{p, &prepared};
  return final_exponentiation(miller_loop({&term, 1}));
}

Fq12 multi_pairing(std::span<const G1Affine> p, std::span<const G2Affine> q) {
  if (p.size() != q.size()) throw std::invalid_argument("multi_pairing: as many G1 as G2 points are needed");
  std::vector<G2Prepared> prepared;
  prepared.reserve(q.size());
  std::vector<PairingTerm> terms;
  terms.reserve(p.size());
  for (size_t i = 0; i < p.size(); ++i) {
    prepared.emplace_back(q[i]);
    terms.push_back({p[i], &prepared.back()});
  }
  return final_exponentiation(miller_loop(terms));
}

bool g2_in_subgroup(const G2Affine& q) {
  // Dai, Lin, Zhao, Zhou, "Fast subgroup membership testings for G1, G2 and GT
  // on pairing-friendly curves" (eprint 2022/348), for BN curves with
  // x ≢ 4 (mod 13) and x ≢ 92 (mod 97), both true of BN254's x:
  //   Q ∈ G2  ⇔  [x+1]Q + ψ([x]Q) + ψ²([x]Q) = ψ³([2x]Q),
  // ψ the untwist-Frobenius-twist endomorphism (Galbraith–Scott). A 63-bit
  // scalar multiplication instead of [r]Q = O's 254 bits; the tests check
  // both agree on points in and off G2.
  if (q.is_infinity()) return true;
  const G2 p = G2::from_affine(q);
  const G2 xp = p.mul(U256{kBnX, 0, 0, 0});
  G2 lhs = xp;
  lhs.add(p);
  lhs.add(psi(xp));
  lhs.add(psi(psi(xp)));
  const G2 rhs = psi(psi(psi(xp.dbl())));
  return lhs.equals(rhs);
}

}  // namespace zkfarm
