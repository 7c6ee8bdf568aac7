// Batched Groth16 verification (groth16/verify.hpp, verify_batch): proofs of
// our prover on the chain fixture (BN254 and BLS12-381, 10 witnesses each)
// pass together; a planted bad proof is found and refused alone, with
// verify_proof's own verdict, and the others still pass; two wrong proofs
// whose errors cancel in a plain sum (A_1 + G, A_2 − G with equal B) are
// refused, which only random weights catch.
#include <gtest/gtest.h>

#include <cstring>

#include "groth16/prover.hpp"
#include "groth16/verify.hpp"
#include "groth16/wtns.hpp"
#include "test_util.hpp"

namespace zkfarm {
namespace {

template <class C>
struct Proved {
  std::vector<ProofOf<C>> proofs;
  std::vector<std::vector<U256>> signals;
};

// Proofs of the chain fixture's 10 witnesses over C, by the CPU prover.
template <class C>
Proved<C> prove_chain(const Zkey& key, const std::string& name) {
  ThreadPool pool(2);
  ProverOf<C> prover(key, pool);
  Proved<C> out;
  std::vector<typename C::Fr> scratch;
  for (int k = 0; k < 10; ++k) {
    const Wtns w = Wtns::open(test::shared_fixture(name + "." + std::to_string(k) + ".wtns"));
    check_witness_matches(key, w);
    std::vector<U256> values(key.n_vars);
    std::memcpy(values.data(), w.values.data(), values.size() * 32);
    out.proofs.push_back(
        prover.prove_witness(values.data(), scratch, random_scalar_of<C>(), random_scalar_of<C>(), pool));
    out.signals.emplace_back(values.begin() + 1, values.begin() + 1 + key.n_public);
  }
  return out;
}

template <class C>
std::vector<BatchItemOf<C>> items_of(const std::vector<ProofOf<C>>& proofs, const std::vector<std::vector<U256>>& s) {
  std::vector<BatchItemOf<C>> items;
  for (size_t i = 0; i < proofs.size(); ++i) items.push_back({&proofs[i], s[i]});
  return items;
}

template <class C>
void check_curve(const std::string& name) {
  using G1 = Xyzz<typename C::G1Params>;
  const Zkey key = Zkey::open(test::shared_fixture(name + ".zkey"));
  const auto vk = VerifyingKeyOf<C>::from_zkey(key);
  const Proved<C> good = prove_chain<C>(key, name);
  ASSERT_GT(key.n_public, 0u);

  // All good: one batch, one pairing check (not ten), every verdict ok.
  size_t pairings = 0;
  for (const VerifyResult& r : verify_batch<C>(vk, items_of<C>(good.proofs, good.signals), &pairings))
    EXPECT_TRUE(r.ok()) << name << ": " << r.reason;
  EXPECT_EQ(pairings, 1u) << name << ": the batch of good proofs did not hold";
  EXPECT_TRUE(verify_batch<C>(vk, std::span<const BatchItemOf<C>>{}).empty());

  // Planted faults, each at its own place among good proofs: each is refused
  // alone, with the verdict verify_proof gives it; the others pass.
  auto proofs = good.proofs;
  auto signals = good.signals;
  const G1 gen = G1::from_affine(C::g1_generator());
  G1 moved = G1::from_affine(proofs[2].a);
  moved.add(gen);
  proofs[2].a = moved.to_affine();                        // a valid point, a wrong proof
  signals[5][0] = (C::Fr::from_u256(signals[5][0]) + C::Fr::one()).to_u256();  // another statement
  proofs[7].c.y += C::Fq::one();                          // off the curve
  signals[9].pop_back();                                  // the wrong count
  const auto verdicts = verify_batch<C>(vk, items_of<C>(proofs, signals), &pairings);
  // 8 well formed (0-6, 8), 2 bad among them (2, 5): the eight fail, both
  // fours fail, {0,1} and {6,8} hold, {2,3} and {4,5} fail, then 2, 3, 4
  // and 5 alone: 11 pairing checks, and only the halves with a bad proof split.
  EXPECT_EQ(pairings, 11u) << name;
  ASSERT_EQ(verdicts.size(), proofs.size());
  for (size_t i = 0; i < proofs.size(); ++i) {
    const VerifyResult alone = verify_proof<C>(vk, proofs[i], signals[i]);
    EXPECT_EQ(verdicts[i].fault, alone.fault) << name << " proof " << i;
    EXPECT_EQ(verdicts[i].reason, alone.reason) << name << " proof " << i;
    const bool planted = i == 2 || i == 5 || i == 7 || i == 9;
    EXPECT_EQ(verdicts[i].ok(), !planted) << name << " proof " << i << ": " << verdicts[i].reason;
  }
  EXPECT_EQ(verdicts[2].fault, VerifyFault::kPairing);
  EXPECT_EQ(verdicts[5].fault, VerifyFault::kPairing);
  EXPECT_EQ(verdicts[7].fault, VerifyFault::kNotOnCurve);
  EXPECT_EQ(verdicts[9].fault, VerifyFault::kPublicCount);

  // Two wrong proofs of the same B whose errors cancel in an unweighted sum:
  // e(A+G, B)·e(A'−G, B) = e(A, B)·e(A', B). Proof 0 and a copy of it for
  // the same statement; a batch without random weights would accept both.
  std::vector<ProofOf<C>> pair{good.proofs[0], good.proofs[0]};
  std::vector<std::vector<U256>> same{good.signals[0], good.signals[0]};
  G1 plus = G1::from_affine(pair[0].a), minus = G1::from_affine(pair[1].a);
  plus.add(gen);
  minus.add_affine(-gen.to_affine());
  pair[0].a = plus.to_affine();
  pair[1].a = minus.to_affine();
  for (const VerifyResult& r : verify_batch<C>(vk, items_of<C>(pair, same), &pairings))
    EXPECT_EQ(r.fault, VerifyFault::kPairing) << name;
  EXPECT_EQ(pairings, 3u) << name;  // the pair, then each alone
  // The untouched pair passes.
  std::vector<ProofOf<C>> twice{good.proofs[0], good.proofs[0]};
  for (const VerifyResult& r : verify_batch<C>(vk, items_of<C>(twice, same), &pairings)) EXPECT_TRUE(r.ok()) << name;
  EXPECT_EQ(pairings, 1u) << name;
}

TEST(VerifyBatch, Bn254FindsEachPlantedBadProofAlone) { check_curve<Bn254>("chain"); }

TEST(VerifyBatch, Bls12381FindsEachPlantedBadProofAlone) { check_curve<bls12_381::Curve>("chain_bls12381"); }

}  // namespace
}  // namespace zkfarm
