#include "groth16/bls12_381_pairing.hpp"

#include <vector>

namespace zkfarm::bls12_381 {

// ---- Fq6 ----

Fq6 operator*(const Fq6& a, const Fq6& b) {
  // Devegili et al. (eprint 2006/471) §4, Karatsuba with v³ = ξ.
  const Fq2 v0 = a.c0 * b.c0, v1 = a.c1 * b.c1, v2 = a.c2 * b.c2;
  return {fq2_mul_by_xi((a.c1 + a.c2) * (b.c1 + b.c2) - v1 - v2) + v0,
          (a.c0 + a.c1) * (b.c0 + b.c1) - v0 - v1 + fq2_mul_by_xi(v2),
          (a.c0 + a.c2) * (b.c0 + b.c2) - v0 - v2 + v1};
}

Fq6 Fq6::inv() const {
  // The adjugate t with a·t = d in Fq2: t0 = c0² − ξc1c2, t1 = ξc2² − c0c1,
  // t2 = c1² − c0c2, d = c0t0 + ξ(c2t1 + c1t2).
  const Fq2 t0 = c0.sqr() - fq2_mul_by_xi(c1 * c2);
  const Fq2 t1 = fq2_mul_by_xi(c2.sqr()) - c0 * c1;
  const Fq2 t2 = c1.sqr() - c0 * c2;
  const Fq2 d = (c0 * t0 + fq2_mul_by_xi(c2 * t1 + c1 * t2)).inv();
  return {t0 * d, t1 * d, t2 * d};
}

// ---- Fq12 ----

Fq12 operator*(const Fq12& a, const Fq12& b) {
  const Fq6 aa = a.c0 * b.c0, bb = a.c1 * b.c1;
  return {aa + bb.mul_by_v(), (a.c0 + a.c1) * (b.c0 + b.c1) - aa - bb};
}

Fq12 Fq12::sqr() const {
  // (c0 + c1 w)² = (c0² + v c1²) + 2c0c1 w, with c0² + v c1² = (c0 + c1)(c0 + v c1) − c0c1 − v c0c1.
  const Fq6 ab = c0 * c1;
  return {(c0 + c1) * (c0 + c1.mul_by_v()) - ab - ab.mul_by_v(), ab + ab};
}

Fq12 Fq12::inv() const {
  // (c0 + c1 w)(c0 − c1 w) = c0² − v c1², an element of Fq6.
  const Fq6 t = (c0.sqr() - c1.sqr().mul_by_v()).inv();
  return {c0 * t, -(c1 * t)};
}

namespace {

// gamma[k−1][i] = ξ^(i·(q^k − 1)/6) for k = 1, 2, 3 and i = 0..5, computed once
// (thread-safe static).
struct FrobeniusConstants {
  Fq2 gamma[3][6];
};

const FrobeniusConstants& frobenius_constants() {
  static const FrobeniusConstants k = [] {
    // (q − 1)/6: q ≡ 1 (mod 6) (q ≡ 1 mod 3 on BLS12 curves, and q is odd).
    Fq::Int e = Fq::modulus();
    e[0] -= 1;
    unsigned __int128 rem = 0;
    for (int i = int(Fq::N) - 1; i >= 0; --i) {
      const unsigned __int128 cur = (rem << 64) | e[i];
      e[i] = uint64_t(cur / 6);
      rem = cur % 6;
    }
    FrobeniusConstants c;
    const Fq2 g = fq2_pow(fq2_mul_by_xi(Fq2::one()), e);  // ξ^((q−1)/6)
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

}  // namespace

Fq12 Fq12::frobenius(int k) const {
  // a = Σ g_i w^i (c0 holds i = 0, 2, 4 and c1 holds i = 1, 3, 5), and
  // (g w^i)^(q^k) = g^(q^k) · w^i · ξ^(i(q^k − 1)/6) since w⁶ = ξ; g^(q^k) is g
  // conjugated for odd k.
  const Fq2* g = frobenius_constants().gamma[k - 1];
  auto f = [k](const Fq2& x) { return (k & 1) ? fq2_conj(x) : x; };
  return {{f(c0.c0), f(c0.c1) * g[2], f(c0.c2) * g[4]}, {f(c1.c0) * g[1], f(c1.c1) * g[3], f(c1.c2) * g[5]}};
}

namespace {

// The line through ψ(T) with slope λ' on the twist, evaluated at P and
// multiplied by w³. On E(Fq12), ψ(T) = (x_T w⁻², y_T w⁻³) and the slope of the
// untwisted line is λ = λ' w⁻¹, so the line
//   y_P − y_T w⁻³ − λ' w⁻¹ (x_P − x_T w⁻²)
// times w³ is (λ' x_T − y_T) − λ' x_P·w² + y_P·w³, with w² = v and w³ = v·w.
// w³ lies in the subfield Fq2[w³] = Fq4, whose elements the final
// exponentiation sends to 1 ((q¹² − 1)/r is a multiple of q⁴ − 1), so the factor
// changes nothing.
Fq12 line(const Fq2& lambda, const G2Affine& t, const G1Affine& p) {
  Fq12 l = Fq12::zero();
  l.c0.c0 = lambda * t.x - t.y;
  l.c0.c1 = -fq2_scale(lambda, p.x);
  l.c1.c1 = {p.y, Fq::zero()};
  return l;
}

// T ← 2T on the twist; returns the tangent's slope λ' = 3x²/(2y).
Fq2 double_step(G2Affine& t) {
  const Fq2 xx = t.x.sqr();
  const Fq2 lambda = (xx.dbl() + xx) * t.y.dbl().inv();
  const Fq2 x3 = lambda.sqr() - t.x.dbl();
  t.y = lambda * (t.x - x3) - t.y;
  t.x = x3;
  return lambda;
}

// T ← T + Q on the twist (T ≠ ±Q: T = [k]Q with 1 < k < |x| < r); returns the
// chord's slope λ' = (y_Q − y_T)/(x_Q − x_T).
Fq2 add_step(G2Affine& t, const G2Affine& q) {
  const Fq2 lambda = (q.y - t.y) * (q.x - t.x).inv();
  const Fq2 x3 = lambda.sqr() - t.x - q.x;
  t.y = lambda * (t.x - x3) - t.y;
  t.x = x3;
  return lambda;
}

}  // namespace

Fq12 miller_loop(std::span<const std::pair<G1Affine, G2Affine>> terms) {
  struct Live {
    G1Affine p;
    G2Affine q, t;
  };
  std::vector<Live> live;
  for (const auto& [p, q] : terms)
    if (!p.is_infinity() && !q.is_infinity()) live.push_back({p, q, q});

  // f_{|x|,Q}: the top bit of |x| is T = Q itself; then per lower bit a
  // doubling and, where the bit is set, an addition of Q (Miller's algorithm).
  Fq12 f = Fq12::one();
  for (int i = 62; i >= 0; --i) {
    f = f.sqr();
    for (Live& l : live) {
      const G2Affine t = l.t;
      f *= line(double_step(l.t), t, l.p);
    }
    if ((kBlsXAbs >> i) & 1) {
      for (Live& l : live) {
        const G2Affine t = l.t;
        f *= line(add_step(l.t, l.q), t, l.p);
      }
    }
  }
  // x < 0: f_{x,Q} = 1/f_{|x|,Q} up to a vertical line (killed by the final
  // exponentiation). f̄ = f^(q⁶) has the same image in GT as 1/f without an
  // inversion: q⁶ ≡ −1 (mod r), since r divides q⁴ − q² + 1, which divides q⁶ + 1.
  return f.conj();
}

Fq12 final_exponentiation(const Fq12& f) {
  // Easy part: f^(q⁶−1) = f̄/f, then ^(q²+1).
  Fq12 t = f.conj() * f.inv();
  t = t.frobenius(2) * t;
  // Hard part: (q⁴ − q² + 1)/r, plainly.
  return t.pow(kHardExponent);
}

Fq12 pairing(const G1Affine& p, const G2Affine& q) {
  const std::pair<G1Affine, G2Affine> term{p, q};
  return final_exponentiation(miller_loop({&term, 1}));
}

bool pairing_product_is_one(std::span<const std::pair<G1Affine, G2Affine>> terms) {
  return final_exponentiation(miller_loop(terms)).is_one();
}

bool g1_in_subgroup(const G1Affine& p) {
  if (p.is_infinity()) return true;
  if (!p.on_curve()) return false;
  return G1::from_affine(p).mul(Fr::modulus()).is_infinity();
}

bool g2_in_subgroup(const G2Affine& q) {
  if (q.is_infinity()) return true;
  if (!q.on_curve()) return false;
  return G2::from_affine(q).mul(Fr::modulus()).is_infinity();
}

}  // namespace zkfarm::bls12_381
