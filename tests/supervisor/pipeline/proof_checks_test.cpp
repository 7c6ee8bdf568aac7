// The supervisor's proof checks (supervisor/pipeline/proof_checks.hpp):
// proofs of one key that wait together are verified in one batch, a planted
// bad proof among them is refused alone (the others pass), and every request
// gets exactly one verdict; proofs of two keys are never mixed; the key's
// data is read from the zkey when none was kept (after a restart).
#include <gtest/gtest.h>

#include <condition_variable>
#include <cstring>
#include <map>
#include <mutex>

#include "groth16/proof_codec.hpp"
#include "groth16/proof_json.hpp"
#include "groth16/prover.hpp"
#include "groth16/wtns.hpp"
#include "supervisor/pipeline/proof_checks.hpp"
#include "test_util.hpp"

namespace zkfarm::supervisor {
namespace {

struct Proved {
  std::string proof;  // encoded
  std::vector<U256> signals;
};

// Encoded proofs of the chain fixture's witnesses 0..n-1 (BN254, CPU prover).
std::vector<Proved> prove_chain(const Zkey& key, int n) {
  ThreadPool pool(2);
  Prover prover(key, pool);
  std::vector<Fr> scratch;
  std::vector<Proved> out;
  for (int k = 0; k < n; ++k) {
    const Wtns w = Wtns::open(test::shared_fixture("chain." + std::to_string(k) + ".wtns"));
    std::vector<U256> values(key.n_vars);
    std::memcpy(values.data(), w.values.data(), values.size() * 32);
    const Proof proof = prover.prove_witness(values.data(), scratch, random_scalar(), random_scalar(), pool);
    out.push_back({encode_proof(proof), std::vector<U256>(values.begin() + 1, values.begin() + 1 + key.n_public)});
  }
  return out;
}

// Verdicts by request number, and a way to hold the only checking thread.
struct Verdicts {
  std::mutex m;
  std::condition_variable cv;
  std::map<int, std::vector<std::string>> got;  // every verdict a request got
  bool hold = false;

  std::function<void(std::string)> done(int i, bool blocks = false) {
    return [this, i, blocks](std::string v) {
      std::unique_lock lock(m);
      got[i].push_back(std::move(v));
      cv.notify_all();
      if (blocks) cv.wait(lock, [&] { return !hold; });
    };
  }
  void wait_for(size_t n) {
    std::unique_lock lock(m);
    cv.wait(lock, [&] { return got.size() >= n; });
  }
};

TEST(ProofChecks, ProofsWaitingTogetherAreBatchedAndABadOneFailsAlone) {
  const std::string zkey = test::shared_fixture("chain.zkey");
  const Zkey key = Zkey::open(zkey);
  const std::vector<Proved> proofs = prove_chain(key, 10);
  VerifyingKeys keys;  // nothing kept: the checks read the key (a restarted zkfarmd)
  ProofChecks checks(keys, 1, 64);
  Verdicts v;
  auto request = [&](int i, const Proved& p, bool blocks = false) {
    return ProofChecks::Request{.key_id = "chain", .zkey = zkey, .proof = p.proof, .public_values = p.signals,
                                .n_public = key.n_public, .done = v.done(i, blocks)};
  };
  // Request 0 holds the only thread in its verdict while 1..12 queue behind it.
  v.hold = true;
  checks.submit(request(0, proofs[0], true));
  v.wait_for(1);
  for (int i = 1; i < 10; ++i) {
    Proved p = proofs[i];
    if (i == 4) p.signals[0][0] ^= 1;  // planted: a proof of another statement
    auto r = request(i, p);
    if (i == 6) {  // a restored partition: its public.json instead of values
      std::vector<U256> w{U256{1, 0, 0, 0}};
      w.insert(w.end(), p.signals.begin(), p.signals.end());
      r.public_json = public_to_json(w.data(), key.n_public);
      r.public_values.clear();
    }
    checks.submit(std::move(r));
  }
  Proved truncated = proofs[7];
  truncated.proof.pop_back();
  checks.submit(request(10, truncated));
  auto unreadable = request(11, proofs[8]);
  unreadable.public_values.clear();
  unreadable.public_json = "[\"12\", 13]";
  checks.submit(std::move(unreadable));
  // Another key (the same file under another name): never in the same batch.
  auto other = request(12, proofs[9]);
  other.key_id = "chain-again";
  checks.submit(std::move(other));
  EXPECT_EQ(checks.waiting(), 12u);
  {
    std::lock_guard lock(v.m);
    v.hold = false;
  }
  v.cv.notify_all();
  v.wait_for(13);

  std::lock_guard lock(v.m);
  for (int i = 0; i < 13; ++i) {
    ASSERT_EQ(v.got[i].size(), 1u) << "request " << i;  // exactly one verdict each
    const std::string& verdict = v.got[i][0];
    if (i == 4) EXPECT_EQ(verdict, "the pairing check failed");
    else if (i == 10) EXPECT_NE(verdict.find("malformed proof"), std::string::npos) << verdict;
    else if (i == 11) EXPECT_EQ(verdict, "the partition's public.json cannot be read back");
    else EXPECT_EQ(verdict, "") << "request " << i;
  }
  // One batch for request 0, one for the 11 of key "chain" behind it, one
  // for "chain-again".
  const ProofChecks::Counts c = checks.counts();
  EXPECT_EQ(c.proofs, 13u);
  EXPECT_EQ(c.batches, 3u);
}

TEST(ProofChecks, AKeyThatCannotBeReadFailsItsProofsWithTheReason) {
  VerifyingKeys keys;
  ProofChecks checks(keys, 2, 64);
  Verdicts v;
  checks.submit({.key_id = "gone", .zkey = "/nonexistent/k.zkey", .proof = std::string(256, '\0'), .n_public = 0,
                 .done = v.done(0)});
  v.wait_for(1);
  std::lock_guard lock(v.m);
  ASSERT_EQ(v.got[0].size(), 1u);
  EXPECT_NE(v.got[0][0].find("cannot read the key's verification data: /nonexistent/k.zkey"), std::string::npos)
      << v.got[0][0];
}

}  // namespace
}  // namespace zkfarm::supervisor
