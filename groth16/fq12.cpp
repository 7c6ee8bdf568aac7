#include "groth16/fq12.hpp"

namespace zkfarm {

Fq2 fq2_pow(const Fq2& a, const U256& e) {
  Fq2 r = Fq2::one();
  for (int i = 255; i >= 0; --i) {
    r = r.sqr();
    if ((e[i / 64] >> (i % 64)) & 1) r *= a;
  }
  return r;
}

// ---- Fq6 ----

Fq6 operator*(const Fq6& a, const Fq6& b) {
  const Fq2 v0 = a.c0 * b.c0, v1 = a.c1 * b.c1, v2 = a.c2 * b.c2;
  return {fq2_mul_by_xi((a.c1 + a.c2) * (b.c1 + b.c2) - v1 - v2) + v0,
          (a.c0 + a.c1) * (b.c0 + b.c1) - v0 - v1 + fq2_mul_by_xi(v2),
          (a.c0 + a.c2) * (b.c0 + b.c2) - v0 - v2 + v1};
}

Fq6 Fq6::sqr() const {
  // (c0 + c1 v + c2 v²)² = (c0² + 2ξ c1c2) + (2c0c1 + ξ c2²) v + (c1² + 2c0c2) v²,
  // the v² term as s1 + s2 + s3 − s0 − s4 with s2 = (c0 − c1 + c2)².
  const Fq2 s0 = c0.sqr(), s1 = (c0 * c1).dbl(), s2 = (c0 - c1 + c2).sqr(), s3 = (c1 * c2).dbl(),
            s4 = c2.sqr();
  return {fq2_mul_by_xi(s3) + s0, fq2_mul_by_xi(s4) + s1, s1 + s2 + s3 - s0 - s4};
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

Fq6 Fq6::mul_by_01(const Fq2& b0, const Fq2& b1) const {
  // The Karatsuba product above with b2 = 0.
  const Fq2 v0 = c0 * b0, v1 = c1 * b1;
  return {fq2_mul_by_xi((c1 + c2) * b1 - v1) + v0, (c0 + c1) * (b0 + b1) - v0 - v1, (c0 + c2) * b0 - v0 + v1};
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
  const Fq6 t = (c0.sqr() - c1.sqr().mul_by_v()).inv();
  return {c0 * t, -(c1 * t)};
}

Fq12 Fq12::frobenius(int k) const {
  // a = Σ g_i w^i (i = 0..5; c0 holds i = 0, 2, 4 and c1 holds i = 1, 3, 5), and
  // (g w^i)^(q^k) = g^(q^k) · w^i · ξ^(i(q^k − 1)/6) since w⁶ = ξ; g^(q^k) is g
  // conjugated for odd k.
  const Fq2* g = frobenius_constants().gamma[k - 1];
  auto f = [k](const Fq2& x) { return (k & 1) ? fq2_conj(x) : x; };
  return {{f(c0.c0), f(c0.c1) * g[2], f(c0.c2) * g[4]}, {f(c1.c0) * g[1], f(c1.c1) * g[3], f(c1.c2) * g[5]}};
}

Fq12 Fq12::mul_by_034(const Fq2& d0, const Fq2& d3, const Fq2& d4) const {
  // The line is L = L0 + L1 w with L0 = (d0, 0, 0) and L1 = (d3, d4, 0) (w³ = v·w);
  // Karatsuba: a·L = (c0 L0 + v c1 L1) + ((c0 + c1)(L0 + L1) − c0 L0 − c1 L1) w.
  const Fq6 a = c0.scale(d0);
  const Fq6 b = c1.mul_by_01(d3, d4);
  const Fq6 e = (c0 + c1).mul_by_01(d0 + d3, d4);
  return {a + b.mul_by_v(), e - a - b};
}

Fq12 Fq12::cyclotomic_sqr() const {
  // Granger–Scott §3.1: view Fq12 as Fq4[t]/(t³ − s), Fq4 = Fq2[s]/(s² − ξ), s = w³,
  // t = w: a = A + B t + C t² with A = g0 + g3 s, B = g1 + g4 s, C = g2 + g5 s
  // (g_i the coefficient of w^i). In the cyclotomic subgroup
  //   a² = (3A² − 2Ā) + (3 s C² + 2B̄) t + (3B² − 2C̄) t², x̄ = x with s → −s.
  auto fq4_sqr = [](const Fq2& x0, const Fq2& x1, Fq2& r0, Fq2& r1) {
    // (x0 + x1 s)² = (x0² + ξ x1²) + 2 x0 x1 s.
    const Fq2 p = x0 * x1;
    r0 = (x0 + x1) * (x0 + fq2_mul_by_xi(x1)) - p - fq2_mul_by_xi(p);
    r1 = p.dbl();
  };
  const Fq2 &g0 = c0.c0, &g2 = c0.c1, &g4 = c0.c2, &g1 = c1.c0, &g3 = c1.c1, &g5 = c1.c2;
  Fq2 a0, a1, b0, b1, s0, s1;
  fq4_sqr(g0, g3, a0, a1);  // A²
  fq4_sqr(g1, g4, b0, b1);  // B²
  fq4_sqr(g2, g5, s0, s1);  // C²
  auto three_minus_two = [](const Fq2& t, const Fq2& z) { return (t - z).dbl() + t; };  // 3t − 2z
  auto three_plus_two = [](const Fq2& t, const Fq2& z) { return (t + z).dbl() + t; };   // 3t + 2z
  Fq12 r;
  r.c0.c0 = three_minus_two(a0, g0);                  // g0' = 3·A²_0 − 2 g0
  r.c1.c1 = three_plus_two(a1, g3);                   // g3' = 3·A²_1 + 2 g3
  r.c1.c0 = three_plus_two(fq2_mul_by_xi(s1), g1);    // g1' = 3·ξ·C²_1 + 2 g1  (s·C² = ξ C²_1 + C²_0 s)
  r.c0.c2 = three_minus_two(s0, g4);                  // g4' = 3·C²_0 − 2 g4
  r.c0.c1 = three_minus_two(b0, g2);                  // g2' = 3·B²_0 − 2 g2
  r.c1.c2 = three_plus_two(b1, g5);                   // g5' = 3·B²_1 + 2 g5
  return r;
}

namespace {

constexpr Naf kXNaf = to_naf(kBnX);
static_assert(kXNaf.len == 63, "x has 63 bits");

// x / d for a small divisor (long division by 64-bit limbs).
U256 div_small(const U256& x, uint64_t d) {
  U256 q{};
  unsigned __int128 rem = 0;
  for (int i = 3; i >= 0; --i) {
    unsigned __int128 cur = (rem << 64) | x[i];
    q[i] = uint64_t(cur / d);
    rem = cur % d;
  }
  return q;
}

}  // namespace

Fq12 Fq12::cyclotomic_exp_x() const {
  const Fq12 inv = conj();
  Fq12 r = *this;  // top digit is 1
  for (int i = kXNaf.len - 2; i >= 0; --i) {
    r = r.cyclotomic_sqr();
    if (kXNaf.d[i] == 1) r *= *this;
    else if (kXNaf.d[i] == -1) r *= inv;
  }
  return r;
}

Fq12 Fq12::pow(const U256& e) const {
  Fq12 r = one();
  for (int i = 255; i >= 0; --i) {
    r = r.sqr();
    if ((e[i / 64] >> (i % 64)) & 1) r *= *this;
  }
  return r;
}

const FrobeniusConstants& frobenius_constants() {
  static const FrobeniusConstants k = [] {
    FrobeniusConstants c;
    const U256 q_minus_1{FqParams::kModulus[0] - 1, FqParams::kModulus[1], FqParams::kModulus[2],
                         FqParams::kModulus[3]};
    const Fq2 xi{Fq::from_u64(9), Fq::one()};
    const Fq2 g = fq2_pow(xi, div_small(q_minus_1, 6));  // ξ^((q−1)/6); 6 divides q − 1
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

}  // namespace zkfarm
