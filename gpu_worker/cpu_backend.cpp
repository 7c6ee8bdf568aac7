#include "gpu_worker/cpu_backend.hpp"

namespace zkfarm::gpu {

CpuBackend::CpuBackend(unsigned threads, size_t cached_keys)
    : pool_(threads), keys_(cached_keys, [this](const Zkey& key) { return std::make_unique<Prover>(key, pool_); }) {}

const Zkey& CpuBackend::load(const std::string& path) { return *keys_.get(path).key; }

Proof CpuBackend::prove(const Zkey& key, const U256* witness, const U256& r, const U256& s,
                        const std::atomic<bool>* cancel) {
  if (auto* e = keys_.find(&key)) return e->prepared->prove_witness(witness, scratch_, r, s, pool_, cancel);
  Prover prover(key, pool_);  // a key from elsewhere: prepared for this proof only
  return prover.prove_witness(witness, scratch_, r, s, pool_, cancel);
}

}  // namespace zkfarm::gpu
