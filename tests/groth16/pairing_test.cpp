// The BN254 pairing (groth16/pairing.hpp, tower.hpp): Fq12 arithmetic, the final
// exponentiation and e(P, Q) against tests/vectors/pairing.txt (bn254_ref.py:
// plain Python, a flat Fq12 and an affine Miller loop); the sparse and
// cyclotomic shortcuts against general arithmetic; bilinearity,
// non-degeneracy, multi-pairings; the G2 subgroup test against [r]Q = O.
#include <gtest/gtest.h>

#include <random>
#include <stdexcept>
#include <vector>

#include "groth16/pairing.hpp"
#include "pairing_vectors.hpp"

namespace zkfarm {
namespace {

using test::cyclotomic;
using test::fq;
using test::fq12_at;
using test::g1_at;
using test::g1_mul;
using test::g2_at;
using test::g2_mul;
using test::fr_mul;
using test::vectors;

// ---- Fq12 and the final exponentiation ----

TEST(Pairing, Fq12MatchesPython) {
  for (auto& v : vectors().get("fq12_mul")) {
    const Fq12 a = fq12_at(v, 0), b = fq12_at(v, 12), c = fq12_at(v, 24);
    EXPECT_TRUE(a * b == c);
    EXPECT_TRUE(b * a == c);
    if (a == b) {
      EXPECT_TRUE(a.sqr() == c);
    }
  }
  for (auto& v : vectors().get("fq12_inv")) {
    EXPECT_TRUE(fq12_at(v, 0).inv() == fq12_at(v, 12));
    EXPECT_TRUE((fq12_at(v, 0) * fq12_at(v, 12)).is_one());
  }
  for (auto& v : vectors().get("fq12_frob")) {
    const int k = int(v[0][0]);
    EXPECT_TRUE(fq12_at(v, 1).frobenius(k) == fq12_at(v, 13)) << "k = " << k;
  }
}

TEST(Pairing, SparseAndCyclotomicShortcutsMatchGeneralArithmetic) {
  std::mt19937_64 rng(7);
  auto random_fq2 = [&] { return Fq2{fq(test::random_scalar(rng)), fq(test::random_scalar(rng))}; };
  auto random_fq12 = [&] {
    Fq12 r;
    for (Fq2* c : {&r.c0.c0, &r.c0.c1, &r.c0.c2, &r.c1.c0, &r.c1.c1, &r.c1.c2}) *c = random_fq2();
    return r;
  };
  for (int i = 0; i < 4; ++i) {
    const Fq12 a = random_fq12();
    const Fq2 d0 = random_fq2(), d3 = random_fq2(), d4 = random_fq2();
    Fq12 line = Fq12::zero();
    line.c0.c0 = d0;
    line.c1.c0 = d3;
    line.c1.c1 = d4;
    EXPECT_TRUE(a.mul_by_034(d0, d3, d4) == a * line);
    const Fq12 c = cyclotomic(a);
    EXPECT_FALSE(c == c.sqr());  // a real test: the element is not 1
    EXPECT_TRUE(c.cyclotomic_sqr() == c.sqr());
    EXPECT_TRUE(c.cyclotomic_exp_x() == c.pow(U256{kBnX, 0, 0, 0}));
    EXPECT_TRUE(c.conj() * c == Fq12::one());
    // The general shortcut formulas are wrong outside the subgroup: proof the
    // test above could fail.
    EXPECT_FALSE(a.cyclotomic_sqr() == a.sqr());
  }
}

TEST(Pairing, FinalExponentiationMatchesPython) {
  for (auto& v : vectors().get("final_exp")) {
    const Fq12 out = final_exponentiation(fq12_at(v, 0));
    EXPECT_TRUE(out == fq12_at(v, 12));
    EXPECT_TRUE(out.pow(kFrModulus).is_one());
  }
}

// ---- the pairing ----

TEST(Pairing, GeneratorPairMatchesPython) {
  const auto rows = vectors().get("pairing");
  const auto& first = rows.front();  // the file's first pairing line is e(G1, G2)
  ASSERT_TRUE(g1_at(first, 0) == test::g1_generator());
  ASSERT_TRUE(g2_at(first, 2) == test::g2_generator());
  const Fq12 e = pairing(test::g1_generator(), test::g2_generator());
  EXPECT_TRUE(e == fq12_at(first, 6));
  EXPECT_FALSE(e.is_one());  // non-degenerate
  EXPECT_TRUE(e.pow(kFrModulus).is_one());
}

TEST(Pairing, MatchesPython) {
  for (auto& v : vectors().get("pairing")) {
    const G1Affine p = g1_at(v, 0);
    const G2Affine q = g2_at(v, 2);
    ASSERT_TRUE(p.on_curve() && q.on_curve());
    EXPECT_TRUE(pairing(p, q) == fq12_at(v, 6));
    const G1Affine ps[] = {p};
    const G2Affine qs[] = {q};
    EXPECT_TRUE(multi_pairing(ps, qs) == fq12_at(v, 6));
  }
}

TEST(Pairing, Bilinear) {
  std::mt19937_64 rng(2026);
  const G1Affine g1 = test::g1_generator();
  const G2Affine g2 = test::g2_generator();
  for (int i = 0; i < 3; ++i) {
    const G1Affine p = g1_mul(g1, test::random_scalar(rng));
    const G2Affine q = g2_mul(g2, test::random_scalar(rng));
    const U256 a = test::random_scalar(rng), b = test::random_scalar(rng);
    const Fq12 e = pairing(p, q);
    EXPECT_FALSE(e.is_one());
    EXPECT_TRUE(pairing(g1_mul(p, a), g2_mul(q, b)) == e.pow(fr_mul(a, b)));
    EXPECT_TRUE(pairing(g1_mul(p, a), q) == pairing(p, g2_mul(q, a)));
    EXPECT_FALSE(pairing(g1_mul(p, a), q) == pairing(p, g2_mul(q, b)));
    // Linear in each argument.
    const G1Affine p2 = g1_mul(g1, test::random_scalar(rng));
    G1 sum = G1::from_affine(p);
    sum.add_affine(p2);
    EXPECT_TRUE(pairing(sum.to_affine(), q) == e * pairing(p2, q));
    const G2Affine q2 = g2_mul(g2, test::random_scalar(rng));
    G2 sum2 = G2::from_affine(q);
    sum2.add_affine(q2);
    EXPECT_TRUE(pairing(p, sum2.to_affine()) == e * pairing(p, q2));
    EXPECT_TRUE(pairing(-p, q) == e.conj());  // GT's inverse is the conjugate
  }
}

TEST(Pairing, MultiPairingIsTheProductOfPairings) {
  std::mt19937_64 rng(11);
  const G1Affine g1 = test::g1_generator();
  const G2Affine g2 = test::g2_generator();
  std::vector<G1Affine> ps;
  std::vector<G2Affine> qs;
  Fq12 product = Fq12::one();
  for (int i = 0; i < 4; ++i) {
    ps.push_back(g1_mul(g1, test::random_scalar(rng)));
    qs.push_back(g2_mul(g2, test::random_scalar(rng)));
    product *= pairing(ps.back(), qs.back());
  }
  EXPECT_TRUE(multi_pairing(ps, qs) == product);
  // e(aP, Q)·e(−P, aQ) = 1, and not when one side is off by a factor.
  const U256 a = test::random_scalar(rng);
  const G1Affine lhs[] = {g1_mul(ps[0], a), -ps[0]};
  const G2Affine rhs[] = {qs[0], g2_mul(qs[0], a)};
  EXPECT_TRUE(multi_pairing(lhs, rhs).is_one());
  const G2Affine wrong[] = {qs[0], g2_mul(qs[0], fr_mul(a, U256{2, 0, 0, 0}))};
  EXPECT_FALSE(multi_pairing(lhs, wrong).is_one());
  // Infinity on either side contributes 1.
  const G1Affine with_inf[] = {ps[1], G1Affine::infinity(), ps[2]};
  const G2Affine with_inf2[] = {qs[1], qs[3], G2Affine::infinity()};
  EXPECT_TRUE(multi_pairing(with_inf, with_inf2) == pairing(ps[1], qs[1]));
  EXPECT_TRUE(pairing(G1Affine::infinity(), qs[0]).is_one());
  EXPECT_THROW(multi_pairing(ps, std::span<const G2Affine>(qs).first(2)), std::invalid_argument);
}

TEST(Pairing, SubgroupTestAgreesWithMultiplicationByR) {
  auto times_r_is_zero = [](const G2Affine& q) { return G2::from_affine(q).mul(kFrModulus).is_infinity(); };
  std::mt19937_64 rng(5);
  for (int i = 0; i < 4; ++i) {
    const G2Affine q = g2_mul(test::g2_generator(), test::random_scalar(rng));
    EXPECT_TRUE(times_r_is_zero(q));
    EXPECT_TRUE(g2_in_subgroup(q));
  }
  EXPECT_TRUE(g2_in_subgroup(G2Affine::infinity()));
  for (auto& v : vectors().get("g2_off_subgroup")) {
    const G2Affine q = g2_at(v, 0);
    ASSERT_TRUE(q.on_curve());
    EXPECT_FALSE(times_r_is_zero(q));
    EXPECT_FALSE(g2_in_subgroup(q));
    // Off G2 plus a point of G2 is still off G2.
    G2 moved = G2::from_affine(q);
    moved.add_affine(test::g2_generator());
    EXPECT_FALSE(g2_in_subgroup(moved.to_affine()));
  }
}

}  // namespace
}  // namespace zkfarm
