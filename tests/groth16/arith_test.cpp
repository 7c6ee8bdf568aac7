// Field and curve arithmetic against independent values computed with Python's
// integers (tests/vectors/bn254.txt, made by tests/vectors/make_vectors.py).
#include <gtest/gtest.h>

#include <random>
#include <vector>


#include "groth16/bls12_381.hpp"
#include "groth16/bn254.hpp"
#include "groth16/mont_mul_lanes.hpp"
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

// The fields, Fq2 and both groups against the Python vectors: tests/groth16/curve_vectors_test.cpp
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

// to_int (Montgomery's reduction alone) against the product by 1 it
// replaces, in every field of both curves (4 and 6 limbs): 0, 1, p − 1,
// p − 2, and random residues below p.
template <class F>
void expect_to_int_is_the_product_by_one(uint64_t seed) {
  using I = typename F::Int;
  const I p = F::modulus();
  I one{};
  one[0] = 1;
  std::vector<I> xs = {I{}, one, p, p};
  xs[2][0] -= 1;
  xs[3][0] -= 2;
  std::mt19937_64 rng(seed);
  for (int i = 0; i < 50000; ++i) {
    I x;
    for (auto& limb : x) limb = rng();
    x[x.size() - 1] &= p[x.size() - 1] >> 1;  // below p
    xs.push_back(x);
  }
  for (const I& x : xs) {
    const F a = F::from_mont(x);
    ASSERT_EQ(a.to_int(), F::mul_portable(a, F::from_mont(one)).mont()) << x[0];
  }
}

TEST(Field, ToIntIsTheMontgomeryProductByOneInEveryField) {
  expect_to_int_is_the_product_by_one<Fr>(1);
  expect_to_int_is_the_product_by_one<Fq>(2);
  expect_to_int_is_the_product_by_one<bls12_381::Fr>(3);
  expect_to_int_is_the_product_by_one<bls12_381::Fq>(4);
}

// The IFMA lanes (groth16/mont_mul_lanes.hpp) against the scalar product,
// byte for byte, in every 4-limb field: edge values (0, 1, p − 1, p − 2, a
// value with every 52-bit limb full), random ones, constant operands
// (stride 0) and a result written over an operand. Skipped where the CPU has
// no IFMA (the scalar path is then the only one).
template <class F>
void expect_lanes_match_scalar(uint64_t seed) {
  using I = typename F::Int;
  const I p = F::modulus();
  std::mt19937_64 rng(seed);
  auto value = [&](size_t k) {
    I x;
    for (auto& limb : x) limb = rng();
    x[3] &= p[3] >> 1;
    switch (k % 11) {
      case 0: return I{};
      case 1: return I{1, 0, 0, 0};
      case 2: x = p; x[0] -= 1; return x;
      case 3: x = p; x[0] -= 2; return x;
      case 4: return I{(uint64_t(1) << 52) - 1, ~0ULL, ~0ULL, p[3] >> 1};
      default: return x;
    }
  };
  for (size_t n : {size_t(8), size_t(64), size_t(200)}) {
    std::vector<F> a(n), b(n), r(n);
    for (size_t i = 0; i < n; ++i) {
      a[i] = F::from_mont(value(i));
      b[i] = F::from_mont(value(i * 7 + 3));
    }
    const size_t m = n & ~size_t(7);
    for (size_t a_stride : {0, 1})
      for (size_t b_stride : {0, 1}) {
        mont_mul_lanes_ifma(a[0].v, a_stride, b[0].v, b_stride, r[0].v, m, F::Params::kModulus, F::Params::kInv);
        for (size_t i = 0; i < m; ++i)
          ASSERT_EQ(r[i], a[i * a_stride] * b[i * b_stride]) << "n " << n << " lane " << i << " strides " << a_stride << b_stride;
      }
    std::vector<F> in_place = a;  // r = a
    mont_mul_lanes_ifma(in_place[0].v, 1, b[0].v, 1, in_place[0].v, m, F::Params::kModulus, F::Params::kInv);
    for (size_t i = 0; i < m; ++i) ASSERT_EQ(in_place[i], a[i] * b[i]) << i;
    // The reduction alone is to_int, in another buffer and in place.
    std::vector<I> canonical(n);
    mont_reduce_lanes_ifma(a[0].v, canonical[0].data(), m, F::Params::kModulus, F::Params::kInv);
    for (size_t i = 0; i < m; ++i) ASSERT_EQ(canonical[i], a[i].to_int()) << "n " << n << " lane " << i;
    in_place = a;
    mont_reduce_lanes_ifma(in_place[0].v, in_place[0].v, m, F::Params::kModulus, F::Params::kInv);
    for (size_t i = 0; i < m; ++i) ASSERT_EQ(in_place[i].mont(), a[i].to_int()) << i;
  }
}

TEST(Field, IfmaLanesMatchTheScalarProductInEveryFourLimbField) {
  if (!ifma_lanes_available()) GTEST_SKIP() << "no AVX-512 IFMA on this CPU";
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    expect_lanes_match_scalar<Fr>(seed);
    expect_lanes_match_scalar<Fq>(seed + 100);
    expect_lanes_match_scalar<bls12_381::Fr>(seed + 200);
  }
}

// safegcd's inverse (Fp::inv for 4 limbs) against Fermat's x^(p−2) and
// x·x⁻¹ = 1, in each 4-limb field: edge values (0, 1, 2, p−1, p−2, (p−1)/2,
// every power of two below p, values of long runs of ones) and random ones.
template <class F>
void expect_inverse_matches_fermat(uint64_t seed) {
  using I = typename F::Int;
  const I p = F::modulus();
  std::vector<I> xs = {I{0, 0, 0, 0}, I{1, 0, 0, 0}, I{2, 0, 0, 0}, I{p[0] - 1, p[1], p[2], p[3]},
                       I{p[0] - 2, p[1], p[2], p[3]}, I{(p[0] >> 1) | (p[1] << 63), (p[1] >> 1) | (p[2] << 63),
                                                         (p[2] >> 1) | (p[3] << 63), p[3] >> 1}};
  for (unsigned k = 0; k + 1 < 64 * 4 && k < 253; ++k) {
    I x{};
    x[k / 64] = uint64_t(1) << (k % 64);
    xs.push_back(x);
    I ones{};
    for (unsigned j = 0; j <= k; ++j) ones[j / 64] |= uint64_t(1) << (j % 64);
    xs.push_back(ones);
  }
  std::mt19937_64 rng(seed);
  for (int i = 0; i < 20000; ++i) xs.push_back(I{rng(), rng(), rng(), rng() & (p[3] >> 1)});  // below p
  for (const I& x : xs) {
    const F a = F::from_mont(x);  // any residue below p; its Montgomery meaning does not matter here
    const F inv = a.inv();
    ASSERT_EQ(inv, a.inv_fermat()) << x[3] << " " << x[2] << " " << x[1] << " " << x[0];
    if (!a.is_zero()) ASSERT_EQ(a * inv, F::one());
  }
}

TEST(Field, SafegcdInverseMatchesFermatInEveryFourLimbField) {
  expect_inverse_matches_fermat<Fr>(1);
  expect_inverse_matches_fermat<Fq>(2);
  expect_inverse_matches_fermat<bls12_381::Fr>(3);
}

}  // namespace
}  // namespace zkfarm
