#pragma once
// The CPU backend: groth16::Prover on a ThreadPool, with the last two keys
// kept prepared (their twiddle tables built, points checked on their curves).
#include "gpu_worker/backend.hpp"
#include "groth16/key_cache.hpp"

namespace zkfarm::gpu {

class CpuBackend final : public ProveBackend {
 public:
  /// threads: proving threads (0: all cores).
  explicit CpuBackend(unsigned threads, size_t cached_keys = 2);

  std::string name() const override { return "cpu"; }
  const Zkey& load(const std::string& path) override;
  Proof prove(const Zkey& key, const PartitionBuffers& in, const U256& r, const U256& s,
              const std::atomic<bool>* cancel) override;

 private:
  ThreadPool pool_;
  KeyCache<Prover> keys_;
};

}  // namespace zkfarm::gpu
