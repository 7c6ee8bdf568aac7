// The BLS12-381 pairing (groth16/pairing.hpp, tower.hpp): the tower and the
// pairing against known answers of an independent plain-Python pairing
// (tests/vectors/bls12_381_pairing.txt from bls12_381_pairing_ref.py), its
// algebra (bilinearity, order r, non-degeneracy), subgroup checks, and the real
// use: snarkjs's own BLS12-381 Groth16 proofs (chain_bls12381) verify, tampered
// ones do not, and snarkjs's vk_alphabeta_12 is our e(α, β)³ (a third
// implementation: ffjavascript's final exponentiation gives the cube).
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "groth16/pairing.hpp"
#include "test_util.hpp"
#include "vector_file.hpp"

namespace zkfarm::bls12_381 {
namespace {

using Pair = std::pair<G1Affine, G2Affine>;

/// Up to 384 bits, from decimal (the vectors' and snarkjs's numbers).
using Big = Limbs<6>;

Big parse_big(const std::string& s) {
  if (s.empty()) throw std::runtime_error("empty decimal");
  Big x{};
  for (char ch : s) {
    if (ch < '0' || ch > '9') throw std::runtime_error("bad decimal: " + s);
    u128 carry = uint64_t(ch - '0');
    for (auto& limb : x) {
      const u128 t = u128(limb) * 10 + carry;
      limb = uint64_t(t);
      carry = t >> 64;
    }
    if (carry) throw std::runtime_error("number over 384 bits: " + s);
  }
  return x;
}

/// A canonical Fq element from decimal (throws when it is ≥ q).
Fq fq(const Big& x) {
  if (!is_canonical<FqParams>(x)) throw std::runtime_error("not below q");
  return Fq::from_int(x);
}
Fq fq(const std::string& s) { return fq(parse_big(s)); }

const test::VectorFile<Big>& vectors() {
  static test::VectorFile<Big> v("bls12_381_pairing.txt", parse_big);
  return v;
}

/// 12 integers from v[at], in the order c0.c0.c0, c0.c0.c1, …, c1.c2.c1.
Fq12 fq12_at(const std::vector<Big>& v, size_t at) {
  Fq12 r;
  Fq2* c[6] = {&r.c0.c0, &r.c0.c1, &r.c0.c2, &r.c1.c0, &r.c1.c1, &r.c1.c2};
  for (int i = 0; i < 6; ++i) *c[i] = {fq(v.at(at + 2 * i)), fq(v.at(at + 2 * i + 1))};
  return r;
}
G1Affine g1_at(const std::vector<Big>& v, size_t at) { return {fq(v.at(at)), fq(v.at(at + 1))}; }
G2Affine g2_at(const std::vector<Big>& v, size_t at) {
  return {{fq(v.at(at)), fq(v.at(at + 1))}, {fq(v.at(at + 2)), fq(v.at(at + 3))}};
}

G1Affine g1_mul(const G1Affine& p, const U256& k) { return G1::from_affine(p).mul(k).to_affine(); }
G2Affine g2_mul(const G2Affine& p, const U256& k) { return G2::from_affine(p).mul(k).to_affine(); }

/// A canonical scalar below r (r's top limb is 0x73ed…, so masking to 62 bits suffices).
U256 random_scalar(std::mt19937_64& rng) { return {rng(), rng(), rng(), rng() & 0x3fffffffffffffffULL}; }
U256 fr_mul(const U256& a, const U256& b) { return (Fr::from_int(a) * Fr::from_int(b)).to_int(); }

// ---- the tower and the final exponentiation against the Python reference ----

TEST(Bls12381Pairing, Fq12ArithmeticMatchesReference) {
  for (const auto& v : vectors().get("fq12_mul")) {
    const Fq12 a = fq12_at(v, 0), b = fq12_at(v, 12), c = fq12_at(v, 24);
    EXPECT_TRUE(a * b == c);
    EXPECT_TRUE(b * a == c);
    if (a == b) {
      EXPECT_TRUE(a.sqr() == c);
    }
  }
  for (const auto& v : vectors().get("fq12_inv")) {
    const Fq12 a = fq12_at(v, 0), c = fq12_at(v, 12);
    EXPECT_TRUE(a.inv() == c);
    EXPECT_TRUE((a * c).is_one());
  }
  for (const auto& v : vectors().get("fq12_frob")) {
    const int k = int(v.at(0)[0]);
    EXPECT_TRUE(fq12_at(v, 1).frobenius(k) == fq12_at(v, 13)) << "k = " << k;
  }
  // The squaring formula against the multiplication, on a non-square line too.
  const Fq12 a = fq12_at(vectors().get("fq12_inv").back(), 0);
  EXPECT_TRUE(a.sqr() == a * a);
  // conj is the q⁶-th power: two applications of the cube.
  EXPECT_TRUE(a.frobenius(3).frobenius(3) == a.conj());
}

TEST(Bls12381Pairing, HardExponentTimesRIsQ4MinusQ2Plus1) {
  // Schoolbook products of little-endian limb vectors, and one subtraction.
  using V = std::vector<uint64_t>;
  auto mul = [](const V& a, const V& b) {
    V r(a.size() + b.size(), 0);
    for (size_t i = 0; i < a.size(); ++i) {
      u128 carry = 0;
      for (size_t j = 0; j < b.size(); ++j) {
        const u128 t = u128(a[i]) * b[j] + r[i + j] + carry;
        r[i + j] = uint64_t(t);
        carry = t >> 64;
      }
      r[i + b.size()] = uint64_t(carry);
    }
    return r;
  };
  auto trim = [](V a) {
    while (!a.empty() && a.back() == 0) a.pop_back();
    return a;
  };
  const Fq::Int qi = Fq::modulus();
  const Fr::Int ri = Fr::modulus();
  const V q(qi.begin(), qi.end()), r(ri.begin(), ri.end());
  const V q2 = mul(q, q), q4 = mul(q2, q2);
  V want = q4;  // q⁴ − q² + 1
  unsigned char borrow = 0;
  for (size_t i = 0; i < want.size(); ++i)
    borrow = _subborrow_u64(borrow, want[i], i < q2.size() ? q2[i] : 0,
                            reinterpret_cast<unsigned long long*>(&want[i]));
  ASSERT_EQ(borrow, 0);
  ++want[0];
  ASSERT_NE(want[0], 0u);  // no carry out of the low limb
  const V got = mul(V(kHardExponent.begin(), kHardExponent.end()), r);
  EXPECT_EQ(trim(got), trim(want));
}

TEST(Bls12381Pairing, FinalExponentiationMatchesReference) {
  for (const auto& v : vectors().get("final_exp")) EXPECT_TRUE(final_exponentiation(fq12_at(v, 0)) == fq12_at(v, 12));
}

TEST(Bls12381Pairing, PairingMatchesReference) {
  const auto rows = vectors().get("pairing");
  // The first line is e(G1 generator, G2 generator).
  EXPECT_TRUE(g1_at(rows.at(0), 0) == Curve::g1_generator());
  EXPECT_TRUE(g2_at(rows.at(0), 2) == Curve::g2_generator());
  for (const auto& v : rows) {
    const G1Affine p = g1_at(v, 0);
    const G2Affine q = g2_at(v, 2);
    const Fq12 want = fq12_at(v, 6);
    EXPECT_TRUE(pairing(p, q) == want);
    EXPECT_EQ(want.is_one(), p.is_infinity() || q.is_infinity());
  }
}

// ---- the pairing's algebra ----

TEST(Bls12381Pairing, BilinearNonDegenerateOfOrderR) {
  const G1Affine g1 = Curve::g1_generator();
  const G2Affine g2 = Curve::g2_generator();
  const Fq12 e = pairing(g1, g2);
  EXPECT_FALSE(e.is_one());
  EXPECT_TRUE(e.pow(Fr::modulus()).is_one());
  std::mt19937_64 rng(381);
  for (int round = 0; round < 2; ++round) {
    const U256 a = random_scalar(rng), b = random_scalar(rng), ab = fr_mul(a, b);
    const G1Affine p = g1_mul(g1, random_scalar(rng));
    const G2Affine q = g2_mul(g2, random_scalar(rng));
    const Fq12 epq = pairing(p, q);
    const Fq12 lhs = pairing(g1_mul(p, a), g2_mul(q, b));
    EXPECT_TRUE(lhs == epq.pow(ab));
    EXPECT_TRUE(lhs == pairing(g1_mul(p, ab), q));
    EXPECT_TRUE(lhs == pairing(p, g2_mul(q, ab)));
    EXPECT_FALSE(lhs == epq);
  }
  // e(−P, Q) = e(P, Q)⁻¹ = e(P, −Q).
  EXPECT_TRUE(pairing(-g1, g2) == e.inv());
  EXPECT_TRUE(pairing(g1, -g2) == e.conj());
}

TEST(Bls12381Pairing, MultiPairingIsTheProductOfPairings) {
  std::mt19937_64 rng(12381);
  const G1Affine p1 = g1_mul(Curve::g1_generator(), random_scalar(rng));
  const G1Affine p2 = g1_mul(Curve::g1_generator(), random_scalar(rng));
  const G2Affine q1 = g2_mul(Curve::g2_generator(), random_scalar(rng));
  const G2Affine q2 = g2_mul(Curve::g2_generator(), random_scalar(rng));
  const std::vector<Pair> terms{{p1, q1}, {G1Affine::infinity(), q2}, {p2, q2}, {p1, G2Affine::infinity()}};
  EXPECT_TRUE(final_exponentiation(miller_loop(terms)) == pairing(p1, q1) * pairing(p2, q2));
  EXPECT_TRUE(miller_loop(std::vector<Pair>{}).is_one());
  EXPECT_TRUE(pairing_product_is_one(std::vector<Pair>{}));
  // e(P1, Q1)·e(−P1, Q1) = 1 and e(aP, Q)·e(P, −aQ) = 1, but not e(P1, Q1)·e(P2, Q2).
  EXPECT_TRUE(pairing_product_is_one(std::vector<Pair>{{p1, q1}, {-p1, q1}, {p2, G2Affine::infinity()}}));
  const U256 a{12345, 0, 0, 0};
  EXPECT_TRUE(pairing_product_is_one(std::vector<Pair>{{g1_mul(p1, a), q2}, {p1, -g2_mul(q2, a)}}));
  EXPECT_FALSE(pairing_product_is_one(std::vector<Pair>{{g1_mul(p1, a), q2}, {p1, -g2_mul(q2, U256{12346, 0, 0, 0})}}));
  EXPECT_FALSE(pairing_product_is_one(std::vector<Pair>{{p1, q1}, {p2, q2}}));
}

// ---- subgroups ----

/// The first point (x, y) of y² = x³ + 4 with x = 1, 2, …: q ≡ 3 (mod 4), so
/// y = s^((q+1)/4) when s = x³ + 4 is a square.
G1Affine first_curve_point() {
  Fq::Int e = Fq::modulus();  // (q + 1)/4 = (q >> 2) + 1 since q ≡ 3 (mod 4)
  for (size_t i = 0; i < Fq::N; ++i) e[i] = (e[i] >> 2) | (i + 1 < Fq::N ? e[i + 1] << 62 : 0);
  e[0] += 1;
  for (uint64_t x = 1;; ++x) {
    const Fq fx = Fq::from_u64(x);
    const Fq s = fx.sqr() * fx + G1Params::b();
    const Fq y = s.pow(e);
    if (y.sqr() == s) return {fx, y};
  }
}

TEST(Bls12381Pairing, SubgroupChecks) {
  const G1Affine g1 = Curve::g1_generator();
  const G2Affine g2 = Curve::g2_generator();
  EXPECT_TRUE(g1_in_subgroup(g1));
  EXPECT_TRUE(g2_in_subgroup(g2));
  EXPECT_TRUE(g1_in_subgroup(G1Affine::infinity()));
  EXPECT_TRUE(g2_in_subgroup(G2Affine::infinity()));
  std::mt19937_64 rng(7);
  EXPECT_TRUE(g1_in_subgroup(g1_mul(g1, random_scalar(rng))));
  EXPECT_TRUE(g2_in_subgroup(g2_mul(g2, random_scalar(rng))));

  // On the curve, off G1: the cofactor is ≈ 2¹²⁶, so the first point found is
  // all but surely outside G1; [r]P ≠ O says it is.
  const G1Affine off = first_curve_point();
  ASSERT_TRUE(off.on_curve());
  EXPECT_FALSE(G1::from_affine(off).mul(Fr::modulus()).is_infinity());
  EXPECT_FALSE(g1_in_subgroup(off));
  // Off the curve: refused.
  EXPECT_FALSE(g1_in_subgroup({g1.x, g1.y + Fq::one()}));
  EXPECT_FALSE(g2_in_subgroup({g2.x, g2.y + Fq2::one()}));
  // On the twist, off G2 (points from the Python reference).
  for (const auto& v : vectors().get("g2_off_subgroup")) {
    const G2Affine q = g2_at(v, 0);
    ASSERT_TRUE(q.on_curve());
    EXPECT_FALSE(g2_in_subgroup(q));
  }
}

// ---- snarkjs's BLS12-381 Groth16 fixtures ----

nlohmann::json read_json(const std::string& name) {
  std::ifstream in(test::shared_fixture(name));
  if (!in) throw std::runtime_error("cannot open fixture " + name);
  return nlohmann::json::parse(in);
}

/// snarkjs's projective JSON: [x, y, "1"] or infinity [.., .., "0"].
G1Affine g1_json(const nlohmann::json& j) {
  if (j.at(2).get<std::string>() == "0") return G1Affine::infinity();
  if (j.at(2).get<std::string>() != "1") throw std::runtime_error("G1 point not normalized");
  return {fq(j.at(0).get<std::string>()), fq(j.at(1).get<std::string>())};
}
Fq2 fq2_json(const nlohmann::json& j) { return {fq(j.at(0).get<std::string>()), fq(j.at(1).get<std::string>())}; }
G2Affine g2_json(const nlohmann::json& j) {
  const Fq2 z = fq2_json(j.at(2));
  if (z.is_zero()) return G2Affine::infinity();
  if (!(z == Fq2::one())) throw std::runtime_error("G2 point not normalized");
  return {fq2_json(j.at(0)), fq2_json(j.at(1))};
}

struct VerifyingKey {
  G1Affine alpha;
  G2Affine beta, gamma, delta;
  std::vector<G1Affine> ic;
  Fq12 alphabeta;  // snarkjs's vk_alphabeta_12
};

VerifyingKey load_vkey() {
  const nlohmann::json j = read_json("chain_bls12381.vkey.json");
  VerifyingKey vk;
  vk.alpha = g1_json(j.at("vk_alpha_1"));
  vk.beta = g2_json(j.at("vk_beta_2"));
  vk.gamma = g2_json(j.at("vk_gamma_2"));
  vk.delta = g2_json(j.at("vk_delta_2"));
  for (const auto& p : j.at("IC")) vk.ic.push_back(g1_json(p));
  const auto& ab = j.at("vk_alphabeta_12");
  Fq2* c[6] = {&vk.alphabeta.c0.c0, &vk.alphabeta.c0.c1, &vk.alphabeta.c0.c2,
               &vk.alphabeta.c1.c0, &vk.alphabeta.c1.c1, &vk.alphabeta.c1.c2};
  for (int k = 0; k < 6; ++k) *c[k] = fq2_json(ab.at(k / 3).at(k % 3));
  return vk;
}

struct Proof {
  G1Affine a, c;
  G2Affine b;
  std::vector<U256> pub;
};

Proof load_proof(int k) {
  const std::string stem = "chain_bls12381." + std::to_string(k);
  const nlohmann::json pj = read_json(stem + ".proof.json");
  Proof p;
  p.a = g1_json(pj.at("pi_a"));
  p.b = g2_json(pj.at("pi_b"));
  p.c = g1_json(pj.at("pi_c"));
  for (const auto& s : read_json(stem + ".public.json")) p.pub.push_back(test::dec(s.get<std::string>()));
  return p;
}

/// The Groth16 check e(−A, B)·e(α, β)·e(vk_x, γ)·e(C, δ) = 1 with
/// vk_x = IC_0 + Σ s_i·IC_i (snarkjs's groth16_verify).
bool groth16_verify(const VerifyingKey& vk, const G1Affine& a, const G2Affine& b, const G1Affine& c,
                    const std::vector<U256>& pub) {
  if (pub.size() + 1 != vk.ic.size()) return false;
  G1 acc = G1::from_affine(vk.ic[0]);
  for (size_t i = 0; i < pub.size(); ++i) acc.add(G1::from_affine(vk.ic[i + 1]).mul(pub[i]));
  const std::vector<Pair> terms{{-a, b}, {vk.alpha, vk.beta}, {acc.to_affine(), vk.gamma}, {c, vk.delta}};
  return pairing_product_is_one(terms);
}

constexpr int kProofs = 10;

TEST(Bls12381Pairing, SnarkjsAlphaBetaIsOurPairingCubed) {
  const VerifyingKey vk = load_vkey();
  const Fq12 e = pairing(vk.alpha, vk.beta);
  EXPECT_TRUE(e.sqr() * e == vk.alphabeta);
  EXPECT_FALSE(e == vk.alphabeta);
}

TEST(Bls12381Pairing, SnarkjsFixtureProofsVerify) {
  const VerifyingKey vk = load_vkey();
  EXPECT_TRUE(g1_in_subgroup(vk.alpha));
  EXPECT_TRUE(g2_in_subgroup(vk.beta) && g2_in_subgroup(vk.gamma) && g2_in_subgroup(vk.delta));
  for (int k = 0; k < kProofs; ++k) {
    SCOPED_TRACE("proof " + std::to_string(k));
    const Proof p = load_proof(k);
    ASSERT_FALSE(p.pub.empty());
    EXPECT_TRUE(g1_in_subgroup(p.a));
    EXPECT_TRUE(g2_in_subgroup(p.b));
    EXPECT_TRUE(g1_in_subgroup(p.c));
    EXPECT_TRUE(groth16_verify(vk, p.a, p.b, p.c, p.pub));
  }
}

TEST(Bls12381Pairing, SnarkjsFixtureTamperedProofsFail) {
  const VerifyingKey vk = load_vkey();
  for (int k = 0; k < kProofs; ++k) {
    SCOPED_TRACE("proof " + std::to_string(k));
    const Proof p = load_proof(k);
    for (size_t i = 0; i < p.pub.size(); ++i) {
      std::vector<U256> pub = p.pub;
      pub[i] = (Fr::from_int(pub[i]) + Fr::one()).to_int();  // signal + 1 (mod r)
      EXPECT_FALSE(groth16_verify(vk, p.a, p.b, p.c, pub)) << "signal " << i;
    }
    EXPECT_FALSE(groth16_verify(vk, p.c, p.b, p.a, p.pub));  // A and C swapped
  }
  // Another proof's public signals with this proof.
  const Proof p0 = load_proof(0), p1 = load_proof(1);
  ASSERT_NE(p0.pub, p1.pub);
  EXPECT_FALSE(groth16_verify(vk, p0.a, p0.b, p0.c, p1.pub));
}

}  // namespace
}  // namespace zkfarm::bls12_381
