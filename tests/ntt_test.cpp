// NTT against a naive DFT over snarkjs's roots; the odd-coset step against
// direct evaluation of the interpolated polynomial on g·ω^i.
#include <gtest/gtest.h>

#include "groth16/ntt.hpp"
#include "test_util.hpp"

namespace zkfarm {
namespace {

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
Fr eval(const std::vector<Fr>& coeffs, const Fr& x) {
  Fr acc = Fr::zero();
  for (size_t j = coeffs.size(); j-- > 0;) acc = acc * x + coeffs[j];
  return acc;
}

class NttTest : public ::testing::TestWithParam<std::tuple<uint32_t, unsigned>> {};

TEST_P(NttTest, MatchesNaiveDft) {
  auto [log_n, threads] = GetParam();
  ThreadPool pool(threads);
  Domain d(log_n, pool);
  std::mt19937_64 rng(log_n * 131 + threads);
  auto coeffs = random_vector(d.size(), rng);
  Fr w = root_of_unity(log_n);

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
  Fr g = odd_coset_generator(log_n);
  x = g;
  for (size_t i = 0; i < d.size(); ++i, x *= w) ASSERT_EQ(coset[i], eval(coeffs, x)) << "i=" << i;
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
