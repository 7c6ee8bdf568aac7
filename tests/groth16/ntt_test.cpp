// NTT against a naive DFT over snarkjs's roots; the odd-coset step against
// direct evaluation of the interpolated polynomial on g·ω^i.
#include <gtest/gtest.h>

#include "groth16/ntt.hpp"
#include "groth16/roots.hpp"
#include "test_util.hpp"

namespace zkfarm {
namespace {

template <class Fr = zkfarm::Fr>
std::vector<Fr> random_vector(size_t n, std::mt19937_64& rng) {
  std::vector<Fr> v(n);
  for (auto& x : v) x = Fr::from_u256(test::random_scalar(rng));
  if (n > 2) {
    v[0] = Fr::zero();  // zeros and ones are most of a real witness
    v[1] = Fr::one();
  }
  return v;
}

// Σ_j coeffs[j]·x^j
template <class Fr>
Fr eval(const std::vector<Fr>& coeffs, const Fr& x) {
  Fr acc = Fr::zero();
  for (size_t j = coeffs.size(); j-- > 0;) acc = acc * x + coeffs[j];
  return acc;
}

class NttTest : public ::testing::TestWithParam<std::tuple<uint32_t, unsigned>> {};

// The transforms of curve C's domain against the naive DFT and direct evaluation.
template <class C>
void check_against_naive(uint32_t log_n, unsigned threads) {
  using Fr = typename C::Fr;
  ThreadPool pool(threads);
  DomainOf<C> d(log_n, pool);
  std::mt19937_64 rng(log_n * 131 + threads);
  auto coeffs = random_vector<Fr>(d.size(), rng);
  Fr w = root_of_unity_of<C>(log_n);

  auto evals = coeffs;
  d.ntt(evals.data(), pool);
  Fr x = Fr::one();
  for (size_t i = 0; i < d.size(); ++i, x *= w) ASSERT_EQ(evals[i], eval(coeffs, x)) << "i=" << i;

  auto back = evals;
  d.intt(back.data(), pool);
  EXPECT_EQ(back, coeffs);

  // to_odd_coset: evaluations on ⟨ω⟩ → evaluations on g·⟨ω⟩ of the same polynomial.
  auto coset = evals;
  d.to_odd_coset(coset.data(), pool);
  Fr g = odd_coset_generator_of<C>(log_n);
  x = g;
  for (size_t i = 0; i < d.size(); ++i, x *= w) ASSERT_EQ(coset[i], eval(coeffs, x)) << "i=" << i;
}

TEST_P(NttTest, MatchesNaiveDft) {
  auto [log_n, threads] = GetParam();
  check_against_naive<Bn254>(log_n, threads);
}

// BLS12-381's Fr: 2-adicity 32, the same transforms.
TEST_P(NttTest, Bls12381MatchesNaiveDft) {
  auto [log_n, threads] = GetParam();
  check_against_naive<bls12_381::Curve>(log_n, threads);
}

INSTANTIATE_TEST_SUITE_P(Sizes, NttTest,
                         ::testing::Combine(::testing::Values(0u, 1u, 2u, 3u, 5u, 8u, 10u, 12u),
                                            ::testing::Values(1u, 3u)));

TEST(Ntt, OddCosetGeneratorIsPrimitive2nRoot) {
  for (uint32_t k : {1u, 11u, 20u, 27u}) {
    Fr g = odd_coset_generator(k);
    Fr x = g;
    for (uint32_t i = 0; i < k; ++i) x = x.sqr();
    EXPECT_EQ(x, -Fr::one()) << "g^(2^k) must be −1 for k=" << k;
  }
}

TEST(Ntt, RejectsDomainPastTwoAdicity) {
  ThreadPool pool(1);
  EXPECT_THROW(Domain(29, pool), std::invalid_argument);
}

}  // namespace
}  // namespace zkfarm
