#pragma once
// The CPU backend: groth16::Prover on a ThreadPool, with the last two keys
// kept prepared (their twiddle tables and ConstraintMatrix built, points
// checked on their curves); synthesis from the witness runs on the same threads.
#include "gpu_worker/backend.hpp"
#include "groth16/key_cache.hpp"

namespace zkfarm::gpu {

class CpuBackend final : public ProveBackend {
 public:
  /// threads: proving threads (0: all cores).
  explicit CpuBackend(unsigned threads, size_t cached_keys = 2);

  std::string name() const override { return "cpu"; }
  const Zkey& load(const std::string& path) override;
  bool has_key(const std::string& path) const override { return keys_.contains(path); }
  Proof prove(const Zkey& key, const U256* witness, const U256& r, const U256& s,
              const std::atomic<bool>* cancel) override;

 private:
  ThreadPool pool_;
  KeyCache<Prover> keys_;
  std::vector<Fr> scratch_;  ///< a, b, c of the partition in progress (3·domain_size), reused
};

}  // namespace zkfarm::gpu
