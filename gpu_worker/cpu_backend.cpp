#include "gpu_worker/cpu_backend.hpp"

namespace zkfarm::gpu {

CpuBackend::CpuBackend(unsigned threads, size_t cached_keys)
    : pool_(threads), keys_(cached_keys, [this](const Zkey& key) {
        // The prover of the key's curve; its constructor checks the key's points.
        auto prepared = std::make_unique<PreparedKey>();
        if (key.curve == CurveId::bls12_381) {
          prepared->bls12_381 = std::make_unique<ProverOf<bls12_381::Curve>>(key, pool_);
        } else {
          prepared->bn254 = std::make_unique<ProverOf<Bn254>>(key, pool_);
        }
        return prepared;
      }) {}

const Zkey& CpuBackend::load(const std::string& path) { return *keys_.get(path).key; }

template <class C>
typename ProverOf<C>::Proof CpuBackend::prove_with(const Zkey& key, const U256* witness, const U256& r, const U256& s,
                                                   const std::atomic<bool>* cancel) {
  auto& scratch = [&]() -> auto& {
    if constexpr (std::is_same_v<C, Bn254>) return scratch_bn254_;
    else return scratch_bls12_381_;
  }();
  if (auto* e = keys_.find(&key)) {
    const ProverOf<C>* prover = nullptr;
    if constexpr (std::is_same_v<C, Bn254>) prover = e->prepared->bn254.get();
    else prover = e->prepared->bls12_381.get();
    if (prover) return prover->prove_witness(witness, scratch, r, s, pool_, cancel);
  }
  // A key from elsewhere (or of the other curve: the constructor refuses
  // it, naming the file): prepared for this proof only.
  ProverOf<C> prover(key, pool_);
  return prover.prove_witness(witness, scratch, r, s, pool_, cancel);
}

Proof CpuBackend::prove(const Zkey& key, const U256* witness, const U256& r, const U256& s,
                        const std::atomic<bool>* cancel) {
  return prove_with<Bn254>(key, witness, r, s, cancel);
}

ProofOf<bls12_381::Curve> CpuBackend::prove_bls12_381(const Zkey& key, const U256* witness, const U256& r,
                                                      const U256& s, const std::atomic<bool>* cancel) {
  return prove_with<bls12_381::Curve>(key, witness, r, s, cancel);
}

}  // namespace zkfarm::gpu
