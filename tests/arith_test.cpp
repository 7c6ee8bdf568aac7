// Field and curve arithmetic against independent values computed with Python's
// integers (tests/vectors/bn254.txt, made by tests/vectors/make_vectors.py).
#include <gtest/gtest.h>


#include "groth16/bn254.hpp"
#include "groth16/ntt.hpp"
#include "test_util.hpp"
#include "vector_file.hpp"

namespace zkfarm {
namespace {

using test::dec;

const test::VectorFile<U256>& vectors() {
  static test::VectorFile<U256> v("bn254.txt", test::dec);
  return v;
}

// The fields, Fq2 and both groups against the Python vectors: curve_vectors_test.cpp
// (one typed test for both curves).

TEST(Field, BatchInverseKeepsZeros) {
  std::vector<Fr> v{Fr::from_u64(3), Fr::zero(), Fr::from_u64(7), Fr::one()}, scratch(4);
  auto expect = v;
  batch_inverse(v.data(), v.size(), scratch.data());
  for (size_t i = 0; i < v.size(); ++i) EXPECT_EQ(v[i], expect[i].inv());
  EXPECT_TRUE(v[1].is_zero());
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
