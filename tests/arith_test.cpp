// Field and curve arithmetic against independent values computed with Python's
// integers (tests/vectors/bn254.txt, made by tests/vectors/make_vectors.py).
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>

#include "groth16/bn254.hpp"
#include "groth16/ntt.hpp"
#include "test_util.hpp"

namespace zkfarm {
namespace {

using test::dec;

struct Vectors {
  std::multimap<std::string, std::vector<U256>> rows;
  Vectors() {
    std::ifstream in(test::repo_path("tests/vectors/bn254.txt"));
    if (!in) throw std::runtime_error("cannot open tests/vectors/bn254.txt");
    std::string line;
    while (std::getline(in, line)) {
      if (line.empty() || line[0] == '#') continue;
      std::istringstream ss(line);
      std::string op, tok;
      ss >> op;
      std::vector<U256> nums;
      while (ss >> tok) nums.push_back(dec(tok));
      rows.emplace(op, nums);
    }
  }
  std::vector<std::vector<U256>> get(const std::string& op) const {
    std::vector<std::vector<U256>> out;
    auto [b, e] = rows.equal_range(op);
    for (auto it = b; it != e; ++it) out.push_back(it->second);
    if (out.empty()) throw std::runtime_error("no vectors for " + op);
    return out;
  }
};

const Vectors& vectors() {
  static Vectors v;
  return v;
}

template <class F>
void check_field(const std::string& prefix) {
  for (auto& v : vectors().get(prefix + "_mul"))
    EXPECT_EQ((F::from_u256(v[0]) * F::from_u256(v[1])).to_u256(), v[2]);
  for (auto& v : vectors().get(prefix + "_add"))
    EXPECT_EQ((F::from_u256(v[0]) + F::from_u256(v[1])).to_u256(), v[2]);
  for (auto& v : vectors().get(prefix + "_sub"))
    EXPECT_EQ((F::from_u256(v[0]) - F::from_u256(v[1])).to_u256(), v[2]);
  for (auto& v : vectors().get(prefix + "_sqr")) EXPECT_EQ(F::from_u256(v[0]).sqr().to_u256(), v[1]);
  for (auto& v : vectors().get(prefix + "_inv")) EXPECT_EQ(F::from_u256(v[0]).inv().to_u256(), v[1]);
  for (auto& v : vectors().get(prefix + "_mont")) EXPECT_EQ(F::from_u256(v[0]).mont(), v[1]);
}

TEST(Field, FqMatchesPython) { check_field<Fq>("fq"); }
TEST(Field, FrMatchesPython) { check_field<Fr>("fr"); }

Fq2 fq2(const U256& a, const U256& b) { return {Fq::from_u256(a), Fq::from_u256(b)}; }

TEST(Field, Fq2MatchesPython) {
  for (auto& v : vectors().get("fq2_mul")) {
    Fq2 c = fq2(v[0], v[1]) * fq2(v[2], v[3]);
    EXPECT_EQ(c.c0.to_u256(), v[4]);
    EXPECT_EQ(c.c1.to_u256(), v[5]);
  }
  for (auto& v : vectors().get("fq2_sqr")) {
    Fq2 c = fq2(v[0], v[1]).sqr();
    EXPECT_EQ(c.c0.to_u256(), v[2]);
    EXPECT_EQ(c.c1.to_u256(), v[3]);
  }
  for (auto& v : vectors().get("fq2_inv")) {
    Fq2 c = fq2(v[0], v[1]).inv();
    EXPECT_EQ(c.c0.to_u256(), v[2]);
    EXPECT_EQ(c.c1.to_u256(), v[3]);
  }
}

TEST(Field, BatchInverseKeepsZeros) {
  std::vector<Fr> v{Fr::from_u64(3), Fr::zero(), Fr::from_u64(7), Fr::one()}, scratch(4);
  auto expect = v;
  batch_inverse(v.data(), v.size(), scratch.data());
  for (size_t i = 0; i < v.size(); ++i) EXPECT_EQ(v[i], expect[i].inv());
  EXPECT_TRUE(v[1].is_zero());
}

G1Affine g1(const std::vector<U256>& v, size_t at) {
  return {Fq::from_u256(v[at]), Fq::from_u256(v[at + 1])};  // (0, 0) is infinity in both encodings
}
G2Affine g2(const std::vector<U256>& v, size_t at) { return {fq2(v[at], v[at + 1]), fq2(v[at + 2], v[at + 3])}; }

void expect_g1(const G1& p, const std::vector<U256>& v, size_t at) {
  G1Affine a = p.to_affine();
  EXPECT_EQ(a.x.to_u256(), v[at]);
  EXPECT_EQ(a.y.to_u256(), v[at + 1]);
}
void expect_g2(const G2& p, const std::vector<U256>& v, size_t at) {
  G2Affine a = p.to_affine();
  EXPECT_EQ(a.x.c0.to_u256(), v[at]);
  EXPECT_EQ(a.x.c1.to_u256(), v[at + 1]);
  EXPECT_EQ(a.y.c0.to_u256(), v[at + 2]);
  EXPECT_EQ(a.y.c1.to_u256(), v[at + 3]);
}

TEST(Curve, G1MatchesPython) {
  for (auto& v : vectors().get("g1_add")) {
    G1 p = G1::from_affine(g1(v, 0));
    G1 mixed = p;
    mixed.add_affine(g1(v, 2));
    expect_g1(mixed, v, 4);
    p.add(G1::from_affine(g1(v, 2)));
    expect_g1(p, v, 4);
  }
  for (auto& v : vectors().get("g1_dbl")) {
    expect_g1(G1::from_affine(g1(v, 0)).dbl(), v, 2);
    G1 same = G1::from_affine(g1(v, 0));  // P + P through the mixed addition's doubling case
    same.add_affine(g1(v, 0));
    expect_g1(same, v, 2);
  }
  for (auto& v : vectors().get("g1_neg")) expect_g1(G1::from_affine(-g1(v, 0)), v, 2);
  for (auto& v : vectors().get("g1_mul")) expect_g1(G1::from_affine(g1(v, 0)).mul(v[2]), v, 3);
}

TEST(Curve, G2MatchesPython) {
  for (auto& v : vectors().get("g2_add")) {
    G2 p = G2::from_affine(g2(v, 0));
    G2 mixed = p;
    mixed.add_affine(g2(v, 4));
    expect_g2(mixed, v, 8);
    p.add(G2::from_affine(g2(v, 4)));
    expect_g2(p, v, 8);
  }
  for (auto& v : vectors().get("g2_dbl")) expect_g2(G2::from_affine(g2(v, 0)).dbl(), v, 4);
  for (auto& v : vectors().get("g2_neg")) expect_g2(G2::from_affine(-g2(v, 0)), v, 4);
  for (auto& v : vectors().get("g2_mul")) expect_g2(G2::from_affine(g2(v, 0)).mul(v[4]), v, 5);
}

TEST(Curve, GeneratorsOnCurve) {
  EXPECT_TRUE(test::g1_generator().on_curve());
  EXPECT_TRUE(test::g2_generator().on_curve());
  G1Affine bad = test::g1_generator();
  bad.y = bad.y + Fq::one();
  EXPECT_FALSE(bad.on_curve());
}

TEST(Roots, MatchSnarkjs) {
  for (auto& v : vectors().get("fr_root")) EXPECT_EQ(root_of_unity(uint32_t(v[0][0])).to_u256(), v[1]);
  for (auto& v : vectors().get("fr_coset_gen"))
    EXPECT_EQ(odd_coset_generator(uint32_t(v[0][0])).to_u256(), v[1]);
}

}  // namespace
}  // namespace zkfarm

namespace zkfarm {
namespace {

// The assembly multiplication against the portable C++ one, on random and edge inputs.
TEST(Field, MulxMatchesPortable) {
  std::mt19937_64 rng(99);
  const U256 edge[] = {{0, 0, 0, 0}, {1, 0, 0, 0},
                       {FqParams::kModulus[0] - 1, FqParams::kModulus[1], FqParams::kModulus[2], FqParams::kModulus[3]},
                       {~0ULL, ~0ULL, ~0ULL, 0x3fffffffffffffffULL}};
  for (int i = 0; i < 200000; ++i) {
    U256 x{rng(), rng(), rng(), rng() & 0x2fffffffffffffffULL}, y{rng(), rng(), rng(), rng() & 0x2fffffffffffffffULL};
    if (i < 16) {
      x = edge[i % 4];
      y = edge[i / 4];
    }
    Fq a = Fq::from_mont(x), b = Fq::from_mont(y);
    ASSERT_EQ(a * b, Fq::mul_portable(a, b)) << i;
    Fr c = Fr::from_mont(x), d = Fr::from_mont(y);
    ASSERT_EQ(c * d, Fr::mul_portable(c, d)) << i;
  }
}

}  // namespace
}  // namespace zkfarm
