#include "groth16/pairing.hpp"

#include <stdexcept>
#include <vector>

#include "groth16/curve_list.hpp"

namespace zkfarm {

namespace {

// A twist point in homogeneous projective coordinates: (x, y) = (X/Z, Y/Z).
template <class C>
struct Projective {
  typename C::Fq2 x, y, z;
};

// T ← 2T and the tangent at T (Costello–Lange–Naehrig 2010, §5, a = 0, with
// b' the twist's constant; checked against the affine formulas in
// tests/vectors/bn254_ref.py). With λ = 3X²/(2YZ) the tangent through the
// untwisted T, times the twist's power of w and 2YZ², is, with
// Y²Z = X³ + b'Z³: 2YZ·y_P − 3X²·x_P + (Y² − 3b'Z²) in the places of
// LineCoeffsOf (the factor Z left over lies in Fq2).
template <class C>
LineCoeffsOf<C> double_step(Projective<C>& t, const typename C::Fq2& three_b, const typename C::Fq& half) {
  using Fq2 = typename C::Fq2;
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
//   λ·y_P − θ·x_P + (θ x_Q − λ y_Q) in the places of LineCoeffsOf.
template <class C>
LineCoeffsOf<C> add_step(Projective<C>& t, const Affine<typename C::G2Params>& q) {
  using Fq2 = typename C::Fq2;
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

// π on a D-type twist: untwist, raise the coordinates to q, twist back. With
// ψ(x, y) = (x w², y w³) and w^(q−1) = ξ^((q−1)/6):
//   π(x, y) = (x̄·ξ^((q−1)/3), ȳ·ξ^((q−1)/2)).
template <class C>
Affine<typename C::G2Params> frobenius_point(const Affine<typename C::G2Params>& q) {
  static_assert(C::kTwist == TwistType::d, "π's constants here are a D-type twist's");
  const auto* g = frobenius_constants_of<C>().gamma[0];
  return {fq2_conj(q.x) * g[2], fq2_conj(q.y) * g[3]};
}

// The same map on XYZZ coordinates (x = X/ZZ, y = Y/ZZZ): conjugation commutes
// with the division, so X, Y take the constants and ZZ, ZZZ are conjugated.
template <class C>
Xyzz<typename C::G2Params> psi(const Xyzz<typename C::G2Params>& p) {
  static_assert(C::kTwist == TwistType::d, "ψ's constants here are a D-type twist's");
  const auto* g = frobenius_constants_of<C>().gamma[0];
  return {fq2_conj(p.X) * g[2], fq2_conj(p.Y) * g[3], fq2_conj(p.ZZ), fq2_conj(p.ZZZ)};
}

// f ← f · l(P), the line's coefficients in the places of C's twist.
template <class C>
inline void apply_line(Fq12Of<C>& f, const LineCoeffsOf<C>& l, const Affine<typename C::G1Params>& p) {
  if constexpr (C::kTwist == TwistType::d) f = f.mul_by_034(fq2_scale(l.y, p.y), fq2_scale(l.x, p.x), l.c);
  else f = f.mul_by_014(l.c, fq2_scale(l.x, p.x), fq2_scale(l.y, p.y));
}

}  // namespace

template <class C>
G2PreparedOf<C>::G2PreparedOf(const Affine<typename C::G2Params>& q) {
  using Fq2 = typename C::Fq2;
  using Fq = typename C::Fq;
  constexpr Naf naf = ate_naf<C>();
  infinity = q.is_infinity();
  if (infinity) return;
  const Fq2 b = C::G2Params::b();
  const Fq2 three_b = b.dbl() + b;
  const Fq half = Fq::from_u64(2).inv();
  const Affine<typename C::G2Params> neg_q = -q;
  Projective<C> t{q.x, q.y, Fq2::one()};
  size_t n = 0;
  for (int i = naf.len - 2; i >= 0; --i) {
    lines[n++] = double_step<C>(t, three_b, half);
    if (naf.d[i] == 1) lines[n++] = add_step<C>(t, q);
    else if (naf.d[i] == -1) lines[n++] = add_step<C>(t, neg_q);
  }
  if constexpr (C::kPairingFamily == PairingFamily::bn) {
    static_assert(!C::kXNegative, "a BN curve with x < 0 would negate T here");
    // T = [6x+2]Q now; then T + π(Q), and that plus −π²(Q).
    const auto q1 = frobenius_point<C>(q);
    const auto q2 = frobenius_point<C>(q1);
    lines[n++] = add_step<C>(t, q1);
    lines[n++] = add_step<C>(t, -q2);
  }
}

template <class C>
Fq12Of<C> miller_loop_of(std::span<const PairingTermOf<C>> terms) {
  constexpr Naf naf = ate_naf<C>();
  Fq12Of<C> f = Fq12Of<C>::one();
  auto apply = [&](size_t line) {
    for (const PairingTermOf<C>& term : terms)
      if (term.q && !term.q->infinity && !term.p.is_infinity()) apply_line<C>(f, term.q->lines[line], term.p);
  };
  size_t n = 0;
  for (int i = naf.len - 2; i >= 0; --i) {
    if (i != naf.len - 2) f = f.sqr();  // f is 1 before the first line
    apply(n++);
    if (naf.d[i] != 0) apply(n++);
  }
  if constexpr (C::kPairingFamily == PairingFamily::bn) {
    apply(n++);
    apply(n++);
  }
  // x < 0: f_{x,Q} = 1/f_{|x|,Q} up to a vertical line, and f̄ has 1/f's image in GT.
  if constexpr (C::kXNegative) f = f.conj();
  return f;
}

template <class C>
Fq12Of<C> final_exponentiation_of(const Fq12Of<C>& f) {
  // Easy part: f^(q⁶−1) = f̄/f, then ^(q²+1). The result t is in the cyclotomic
  // subgroup: its inverse is its conjugate and squarings are Granger–Scott's.
  Fq12Of<C> t = f.conj() * f.inv();
  t = t.frobenius(2) * t;
  if constexpr (C::kPairingFamily == PairingFamily::bls12) {
    // Hard part: (q⁴ − q² + 1)/r, plainly.
    return t.pow(C::kHardExponent);
  } else {
    static_assert(!C::kXNegative, "the chain below takes t^x for x > 0");
    // Hard part (Scott et al. 2009, §5): (q⁴ − q² + 1)/r = λ0 + λ1 q + λ2 q² + λ3 q³
    // with λ3 = 1, λ2 = 6x² + 1, λ1 = −36x³ − 18x² − 12x + 1,
    // λ0 = −36x³ − 30x² − 18x − 2, computed as y0·y1²·y2⁶·y3¹²·y4¹⁸·y5³⁰·y6³⁶ with
    // the y_i below (t^x = fu, t^x² = fu2, t^x³ = fu3; p-th powers by Frobenius)
    // and a vectorial addition chain for the exponents (1, 2, 6, 12, 18, 30, 36).
    const Fq12Of<C> fu = t.cyclotomic_exp_x();
    const Fq12Of<C> fu2 = fu.cyclotomic_exp_x();
    const Fq12Of<C> fu3 = fu2.cyclotomic_exp_x();
    const Fq12Of<C> fp2 = t.frobenius(2);
    const Fq12Of<C> y0 = t.frobenius(1) * fp2 * fp2.frobenius(1);  // t^(q + q² + q³)
    const Fq12Of<C> y1 = t.conj();                                  // t^−1
    const Fq12Of<C> y2 = fu2.frobenius(2);                          // t^(x² q²)
    const Fq12Of<C> y3 = fu.frobenius(1).conj();                    // t^(−x q)
    const Fq12Of<C> y4 = (fu * fu2.frobenius(1)).conj();            // t^(−x − x² q)
    const Fq12Of<C> y5 = fu2.conj();                                // t^(−x²)
    const Fq12Of<C> y6 = (fu3 * fu3.frobenius(1)).conj();           // t^(−x³ − x³ q)
    Fq12Of<C> t0 = y6.cyclotomic_sqr() * y4 * y5;
    Fq12Of<C> t1 = y3 * y5 * t0;
    t0 = t0 * y2;
    t1 = (t1.cyclotomic_sqr() * t0).cyclotomic_sqr();
    t0 = t1 * y1;
    t1 = t1 * y0;
    return t0.cyclotomic_sqr() * t1;
  }
}

template <class C>
Fq12Of<C> pairing_of(const Affine<typename C::G1Params>& p, const Affine<typename C::G2Params>& q) {
  if (p.is_infinity() || q.is_infinity()) return Fq12Of<C>::one();
  const G2PreparedOf<C> prepared(q);
  const PairingTermOf<C> term{p, &prepared};
  return final_exponentiation_of<C>(miller_loop_of<C>({&term, 1}));
}

template <class C>
bool g1_in_subgroup_of(const Affine<typename C::G1Params>& p) {
  if (p.is_infinity()) return true;
  if (!p.on_curve()) return false;
  if constexpr (C::kG1CofactorIsOne) return true;
  else return Xyzz<typename C::G1Params>::from_affine(p).mul(C::Fr::modulus()).is_infinity();
}

template <class C>
bool g2_in_subgroup_of(const Affine<typename C::G2Params>& q) {
  using G2 = Xyzz<typename C::G2Params>;
  if (q.is_infinity()) return true;
  if constexpr (C::kPairingFamily == PairingFamily::bn) {
    // Dai, Lin, Zhao, Zhou, "Fast subgroup membership testings for G1, G2 and GT
    // on pairing-friendly curves" (eprint 2022/348), for BN curves with
    // x ≢ 4 (mod 13) and x ≢ 92 (mod 97), both true of BN254's x:
    //   Q ∈ G2  ⇔  [x+1]Q + ψ([x]Q) + ψ²([x]Q) = ψ³([2x]Q),
    // ψ the untwist-Frobenius-twist endomorphism (Galbraith–Scott). A 63-bit
    // scalar multiplication instead of [r]Q = O's 254 bits; the tests check
    // both agree on points in and off G2.
    static_assert(C::kX % 13 != 4 && C::kX % 97 != 92, "the test of Dai et al. needs these");
    const G2 p = G2::from_affine(q);
    const G2 xp = p.mul(U256{C::kX, 0, 0, 0});
    G2 lhs = xp;
    lhs.add(p);
    lhs.add(psi<C>(xp));
    lhs.add(psi<C>(psi<C>(xp)));
    const G2 rhs = psi<C>(psi<C>(psi<C>(xp.dbl())));
    return lhs.equals(rhs);
  } else {
    if (!q.on_curve()) return false;
    return G2::from_affine(q).mul(C::Fr::modulus()).is_infinity();
  }
}

// Every curve of Curves gets the templates above.
#define ZKFARM_PAIRING_INSTANTIATE(C)                                                                   \
  template struct G2PreparedOf<C>;                                                                      \
  template Fq12Of<C> miller_loop_of<C>(std::span<const PairingTermOf<C>>);                              \
  template Fq12Of<C> final_exponentiation_of<C>(const Fq12Of<C>&);                                      \
  template Fq12Of<C> pairing_of<C>(const Affine<C::G1Params>&, const Affine<C::G2Params>&);             \
  template bool g1_in_subgroup_of<C>(const Affine<C::G1Params>&);                                       \
  template bool g2_in_subgroup_of<C>(const Affine<C::G2Params>&);
ZKFARM_FOR_EACH_CURVE(ZKFARM_PAIRING_INSTANTIATE)

// ---- BN254's names ----

Fq12 miller_loop(std::span<const PairingTerm> terms) { return miller_loop_of<Bn254>(terms); }
Fq12 final_exponentiation(const Fq12& f) { return final_exponentiation_of<Bn254>(f); }
Fq12 pairing(const G1Affine& p, const G2Affine& q) { return pairing_of<Bn254>(p, q); }

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

bool g2_in_subgroup(const G2Affine& q) { return g2_in_subgroup_of<Bn254>(q); }

}  // namespace zkfarm

// ---- BLS12-381's names ----

namespace zkfarm::bls12_381 {

Fq12 miller_loop(std::span<const std::pair<G1Affine, G2Affine>> terms) {
  std::vector<G2PreparedOf<Curve>> prepared;
  prepared.reserve(terms.size());
  std::vector<PairingTermOf<Curve>> t;
  t.reserve(terms.size());
  for (const auto& [p, q] : terms) {
    prepared.emplace_back(q);
    t.push_back({p, &prepared.back()});
  }
  return miller_loop_of<Curve>(t);
}
Fq12 final_exponentiation(const Fq12& f) { return final_exponentiation_of<Curve>(f); }
Fq12 pairing(const G1Affine& p, const G2Affine& q) { return pairing_of<Curve>(p, q); }
bool pairing_product_is_one(std::span<const std::pair<G1Affine, G2Affine>> terms) {
  return final_exponentiation(miller_loop(terms)).is_one();
}
bool g1_in_subgroup(const G1Affine& p) { return g1_in_subgroup_of<Curve>(p); }
bool g2_in_subgroup(const G2Affine& q) { return g2_in_subgroup_of<Curve>(q); }

}  // namespace zkfarm::bls12_381
