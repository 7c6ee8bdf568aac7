// Concurrent prove steps (gpu_worker/lane_gate.hpp, the backends'
// workspaces; issue 36), emulated on the CPU backend where there is no GPU:
// the same witnesses and blinding scalars proved from four threads at once
// through the lane gate give proofs byte-identical to the one-at-a-time
// path, for BN254 and BLS12-381 keys side by side; steps of small loaded
// keys really overlap; a key that is not loaded, or is larger than the
// gate's limit, is proved alone.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <thread>

#include "gpu_worker/cpu_backend.hpp"
#include "gpu_worker/lane_gate.hpp"
#include "groth16/proof_codec.hpp"
#include "groth16/verify.hpp"
#include "groth16/wtns.hpp"
#include "test_util.hpp"

namespace zkfarm::gpu {
namespace {

struct Partition {
  std::string zkey;
  std::vector<U256> witness;
  U256 r, s;
};

// The chain fixtures' witnesses of both curves, each with its own blinding scalars.
std::vector<Partition> partitions() {
  std::vector<Partition> out;
  for (const char* name : {"chain", "chain_bls12381"}) {
    const std::string zkey = test::shared_fixture(std::string(name) + ".zkey");
    const Zkey key = Zkey::open(zkey);
    for (int k = 0; k < 6; ++k) {
      const Wtns w = Wtns::open(test::shared_fixture(std::string(name) + "." + std::to_string(k) + ".wtns"));
      Partition p{zkey, std::vector<U256>(key.n_vars), {}, {}};
      std::memcpy(p.witness.data(), w.values.data(), key.n_vars * 32);
      with_curve(key.curve, [&]<class C>(std::type_identity<C>) {
        p.r = random_scalar_of<C>();
        p.s = random_scalar_of<C>();
      });
      out.push_back(std::move(p));
    }
  }
  return out;
}

std::string prove(ProveBackend& backend, const Zkey& key, const Partition& p) {
  return with_curve(key.curve, [&]<class C>(std::type_identity<C>) {
    return encode_proof(prove_of<C>(backend, key, p.witness.data(), p.r, p.s));
  });
}

// Counts the prove steps in flight; with `meet` > 1, each step waits (up to
// a minute) until `meet` steps are in flight at once, so a gate that never
// lets steps overlap shows as "never met" rather than as a slow test.
class Overlap final : public ProveBackend {
 public:
  Overlap(ProveBackend& inner, int meet) : inner_(inner), meet_(meet) {}
  std::string name() const override { return inner_.name(); }
  const Zkey& load(const std::string& path) override {
    ++loads;
    return inner_.load(path);
  }
  bool has_key(const std::string& path) const override { return inner_.has_key(path); }
  const Zkey* loaded(const std::string& path) override { return inner_.loaded(path); }
  AnyProof prove_curve(CurveId curve, const Zkey& key, const U256* witness, const U256& r, const U256& s,
                       const std::atomic<bool>* cancel) override {
    {
      std::unique_lock lock(m_);
      const int now = ++in_flight_;
      most = std::max(most, now);
      cv_.notify_all();
      if (meet_ > 1 && !met) {
        if (cv_.wait_for(lock, std::chrono::seconds(60), [&] { return in_flight_ >= meet_ || met; })) met = true;
      }
    }
    AnyProof proof = inner_.prove_curve(curve, key, witness, r, s, cancel);
    std::lock_guard lock(m_);
    --in_flight_;
    return proof;
  }

  std::atomic<int> loads{0};
  int most = 0;
  bool met = false;

 private:
  ProveBackend& inner_;
  const int meet_;
  std::mutex m_;
  std::condition_variable cv_;
  int in_flight_ = 0;
};

// Every partition proved through `gate` from `threads` threads at once.
std::vector<std::string> prove_concurrently(LaneGate& gate, ProveBackend& backend, const std::vector<Partition>& ps,
                                            int threads) {
  std::vector<std::string> out(ps.size());
  std::atomic<size_t> next{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&] {
      for (size_t i; (i = next++) < ps.size();)
        out[i] = gate.with_key(ps[i].zkey, [&](const Zkey& key) { return prove(backend, key, ps[i]); });
    });
  }
  for (auto& t : pool) t.join();
  return out;
}

TEST(Lanes, ConcurrentProveStepsAreByteIdenticalToOneAtATime) {
  const std::vector<Partition> ps = partitions();
  std::vector<std::string> alone;
  {
    CpuBackend cpu(2, 2);
    for (const Partition& p : ps) alone.push_back(prove(cpu, cpu.load(p.zkey), p));
  }
  CpuBackend cpu(2, 2);
  Overlap overlap(cpu, 3);
  // Both keys loaded first (each alone), then every step shares the device.
  LaneGate gate(overlap, 4);
  for (const char* name : {"chain.zkey", "chain_bls12381.zkey"})
    gate.with_key(test::shared_fixture(name), [](const Zkey&) { return 0; });
  EXPECT_EQ(overlap.loads, 2);
  const std::vector<std::string> together = prove_concurrently(gate, overlap, ps, 4);
  for (size_t i = 0; i < ps.size(); ++i) EXPECT_EQ(together[i], alone[i]) << "partition " << i;
  EXPECT_TRUE(overlap.met) << "the steps never ran three at once";
  EXPECT_GE(overlap.most, 3);
  EXPECT_EQ(overlap.loads, 2);  // loaded keys are not loaded again
}

TEST(Lanes, KeysNotLoadedOrLargerThanTheLimitAreProvedAlone) {
  const std::vector<Partition> ps = partitions();
  CpuBackend cpu(2, 2);
  Overlap overlap(cpu, 1);
  // Limit 2^1: no key here is that small, so every step runs alone (after
  // its load), whatever the lanes.
  LaneGate gate(overlap, 4, 1);
  const std::vector<std::string> got = prove_concurrently(gate, overlap, ps, 4);
  EXPECT_EQ(overlap.most, 1);
  EXPECT_EQ(overlap.loads, int(ps.size()));  // every step through load(), alone
  for (size_t i = 0; i < ps.size(); ++i) {
    const Zkey key = Zkey::open(ps[i].zkey);
    const bool ok = with_curve(key.curve, [&]<class C>(std::type_identity<C>) {
      const ProofOf<C> proof = decode_proof<C>(got[i]);
      const auto vk = VerifyingKeyOf<C>::from_zkey(key);
      return verify_proof<C>(vk, proof, std::span<const U256>(ps[i].witness).subspan(1, key.n_public)).ok();
    });
    EXPECT_TRUE(ok) << "partition " << i;
  }
}

}  // namespace
}  // namespace zkfarm::gpu
