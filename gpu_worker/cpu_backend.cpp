#include "gpu_worker/cpu_backend.hpp"

namespace zkfarm::gpu {

CpuBackend::CpuBackend(unsigned threads, size_t cached_keys)
    : pool_(threads), keys_(cached_keys, [this](const Zkey& key) {
        // The prover of the key's curve; its constructor checks the key's points.
        auto prepared = std::make_unique<PreparedKey>();
        with_curve(key.curve, [&]<class C>(std::type_identity<C>) {
          prepared->prover = std::make_unique<ProverOf<C>>(key, pool_);
        });
        return prepared;
      }) {}

const Zkey& CpuBackend::load(const std::string& path) {
  std::lock_guard lock(keys_mutex_);
  return *keys_.get(path).key;
}

const Zkey* CpuBackend::loaded(const std::string& path) {
  std::lock_guard lock(keys_mutex_);
  auto* e = keys_.find_ready(path);
  return e ? e->key.get() : nullptr;
}

template <class C>
typename ProverOf<C>::Proof CpuBackend::prove_with(const Zkey& key, const U256* witness, const U256& r, const U256& s,
                                                   const std::atomic<bool>* cancel) {
  auto lease = scratch_.take();
  auto& scratch = std::get<Scratch<C>>(*lease);
  const ProverOf<C>* prepared = nullptr;
  {
    std::lock_guard lock(keys_mutex_);
    if (auto* e = keys_.find(&key))
      if (auto* prover = std::get_if<ProverPtr<C>>(&e->prepared->prover); prover && *prover) prepared = prover->get();
  }
  if (prepared) return prepared->prove_witness(witness, scratch, r, s, pool_, cancel);
  // A key from elsewhere (or of the other curve: the constructor refuses
  // it, naming the file): prepared for this proof only.
  ProverOf<C> prover(key, pool_);
  return prover.prove_witness(witness, scratch, r, s, pool_, cancel);
}

AnyProof CpuBackend::prove_curve(CurveId curve, const Zkey& key, const U256* witness, const U256& r,
                                 const U256& s, const std::atomic<bool>* cancel) {
  return with_curve(curve, [&]<class C>(std::type_identity<C>) -> AnyProof {
    return prove_with<C>(key, witness, r, s, cancel);
  });
}

}  // namespace zkfarm::gpu
