// Pippenger MSM against the naive sum Σ k_i·P_i, with zero and one scalars,
// points at infinity, repeated and opposite points, every window width.
#include <gtest/gtest.h>

#include "groth16/msm.hpp"
#include "test_util.hpp"

namespace zkfarm {
namespace {

// C: the points' curve (G1Params or G2Params of a curve), FrP: its scalar
// field's parameters, bits: its kFrBits.
template <class C, class FrP = FrParams, unsigned bits = Bn254::kFrBits>
void check(size_t n, unsigned threads, unsigned c_bits, const Affine<C>& gen) {
  std::mt19937_64 rng(n * 7 + threads + c_bits);
  auto cs = test::make_msm_case<C, FrP>(n, gen, rng);
  ThreadPool pool(threads);
  constexpr size_t stride = sizeof(Affine<C>);
  ScalarPlan plan = plan_scalars(cs.scalars.data(), n, pool, c_bits, bits);
  auto expect = msm_naive<C>(cs.points.data(), stride, cs.scalars.data(), n);
  auto got = msm<C>(cs.points.data(), stride, plan, 0, n, pool);
  EXPECT_TRUE(got.equals(expect)) << "n=" << n << " threads=" << threads << " c=" << plan.c;
  // A sub-range, as the C MSM takes witness[nPublic+1..].
  if (n > 4) {
    size_t first = 3;
    auto sub_expect = msm_naive<C>(cs.points.data() + first * stride, stride, cs.scalars.data() + first, n - first);
    auto sub = msm<C>(cs.points.data() + first * stride, stride, plan, first, n - first, pool);
    EXPECT_TRUE(sub.equals(sub_expect)) << "sub-range n=" << n;
  }
}

TEST(Msm, G1MatchesNaiveSum) {
  for (size_t n : {0, 1, 2, 9, 100, 700})
    for (unsigned threads : {1u, 3u}) check<G1Params>(n, threads, 0, test::g1_generator());
}

// BLS12-381: 96-byte G1 and 192-byte G2 points, 255-bit scalars (r − 1 and
// values just below r fill the top window).
TEST(Msm, Bls12381MatchesNaiveSum) {
  using bls12_381::Curve;
  for (size_t n : {1, 9, 100, 700}) {
    check<bls12_381::G1Params, bls12_381::FrParams, Curve::kFrBits>(n, 2, 0, Curve::g1_generator());
  }
  for (unsigned c : {2u, 7u, 11u, kMaxWindowBits}) {
    check<bls12_381::G1Params, bls12_381::FrParams, Curve::kFrBits>(60, 2, c, Curve::g1_generator());
  }
  check<bls12_381::G2Params, bls12_381::FrParams, Curve::kFrBits>(40, 2, 0, Curve::g2_generator());
  ThreadPool pool(1);
  std::vector<U256> one{U256{5, 0, 0, 0}};
  EXPECT_THROW(plan_scalars(one.data(), 1, pool, 8, 256), std::invalid_argument);
  // 255 bits at c = 15: 18 windows, where 254 bits need 17.
  EXPECT_EQ(plan_scalars(one.data(), 1, pool, 15, 255).windows, 18u);
  EXPECT_EQ(plan_scalars(one.data(), 1, pool, 15, 254).windows, 17u);
}

TEST(Msm, G1EveryWindowWidth) {
  for (unsigned c = 2; c <= kMaxWindowBits; c += 1) check<G1Params>(60, 2, c, test::g1_generator());
  ThreadPool pool(1);
  std::vector<U256> one{U256{5, 0, 0, 0}};
  EXPECT_THROW(plan_scalars(one.data(), 1, pool, kMaxWindowBits + 1), std::invalid_argument);
}

// Scalars whose every window holds the largest digit, +2^(c−1) (an int16_t must
// hold it), and the largest negative one: caught a c = 16 overflow at 2^20.
TEST(Msm, ExtremeDigitsInEveryWindow) {
  ThreadPool pool(2);
  for (unsigned c : {9u, 13u, kMaxWindowBits}) {
    std::vector<U256> scalars;
    for (uint64_t pattern : {uint64_t(1) << (c - 1), (uint64_t(1) << c) - 1, (uint64_t(1) << (c - 1)) + 1}) {
      U256 k{0, 0, 0, 0};
      for (unsigned bit = 0; bit + c <= 250; bit += c)
        for (unsigned j = 0; j < c; ++j)
          if ((pattern >> j) & 1) k[(bit + j) / 64] |= uint64_t(1) << ((bit + j) % 64);
      scalars.push_back(k);
    }
    std::vector<uint8_t> pts(scalars.size() * 64);
    std::mt19937_64 rng(c);
    for (size_t i = 0; i < scalars.size(); ++i)
      G1::from_affine(test::g1_generator()).mul(test::random_scalar(rng)).to_affine().store(&pts[i * 64]);
    auto plan = plan_scalars(scalars.data(), scalars.size(), pool, c);
    EXPECT_TRUE(msm<G1Params>(pts.data(), 64, plan, 0, scalars.size(), pool)
                    .equals(msm_naive<G1Params>(pts.data(), 64, scalars.data(), scalars.size())))
        << "c=" << c;
  }
}

TEST(Msm, G1BatchAffineWithManyFlushes) {
  // 512 buckets, batches of 64: many flushes, side buckets for conflicts.
  check<G1Params>(3000, 2, 10, test::g1_generator());
}

TEST(Msm, G2MatchesNaiveSum) {
  for (size_t n : {1, 9, 200})
    for (unsigned threads : {1u, 2u}) check<G2Params>(n, threads, 0, test::g2_generator());
  check<G2Params>(50, 2, 3, test::g2_generator());
  check<G2Params>(400, 2, 10, test::g2_generator());  // batch-affine path over Fq2
}

TEST(Msm, AllZeroScalarsGiveInfinity) {
  ThreadPool pool(2);
  std::vector<uint8_t> pts(10 * 64);
  for (size_t i = 0; i < 10; ++i) test::g1_generator().store(&pts[i * 64]);
  std::vector<U256> zeros(10, U256{0, 0, 0, 0});
  auto plan = plan_scalars(zeros.data(), 10, pool);
  EXPECT_TRUE(msm<G1Params>(pts.data(), 64, plan, 0, 10, pool).is_infinity());
}

TEST(Msm, WindowBitsGrowWithSize) {
  EXPECT_LE(msm_window_bits(10), msm_window_bits(1 << 16));
  EXPECT_GE(msm_window_bits(1 << 20), 12u);
}

}  // namespace
}  // namespace zkfarm
