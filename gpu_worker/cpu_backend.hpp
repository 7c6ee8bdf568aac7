#pragma once
// The CPU backend: groth16's ProverOf<C> of the key's curve (BN254 or
// BLS12-381) on a ThreadPool, with the last two keys kept prepared (their twiddle tables and ConstraintMatrix built, points
// checked on their curves); synthesis from the witness runs on the same threads.
#include <memory>
#include <tuple>
#include <vector>

#include "gpu_worker/backend.hpp"
#include "gpu_worker/workspace_pool.hpp"
#include "groth16/key_cache.hpp"

#include <mutex>

namespace zkfarm::gpu {

class CpuBackend final : public ProveBackend {
 public:
  /// threads: proving threads (0: all cores).
  explicit CpuBackend(unsigned threads, size_t cached_keys = 2);

  std::string name() const override { return "cpu"; }
  const Zkey& load(const std::string& path) override;
  bool has_key(const std::string& path) const override {
    std::lock_guard lock(keys_mutex_);
    return keys_.contains(path);
  }
  const Zkey* loaded(const std::string& path) override;
  AnyProof prove_curve(CurveId curve, const Zkey& key, const U256* witness, const U256& r, const U256& s,
                       const std::atomic<bool>* cancel) override;

 private:
  template <class C>
  using ProverPtr = std::unique_ptr<ProverOf<C>>;
  template <class C>
  using Scratch = std::vector<typename ProverOf<C>::Fr>;
  /// A prepared key: the prover of its curve (the variant's alternative of
  /// the key's curve).
  struct PreparedKey {
    Curves::Variant<ProverPtr> prover;
  };
  template <class C>
  typename ProverOf<C>::Proof prove_with(const Zkey& key, const U256* witness, const U256& r, const U256& s,
                                         const std::atomic<bool>* cancel);
  ThreadPool pool_;
  mutable std::mutex keys_mutex_;  // keys_'s list (load() alone changes what it holds)
  KeyCache<PreparedKey> keys_;
  /// a, b, c of a partition in progress (3·domain_size Fr of its curve),
  /// reused: one per curve, taken by type (std::get<Scratch<C>>); one set per
  /// prove step in flight.
  template <class... Cs>
  static std::tuple<Scratch<Cs>...> scratch_for(CurveList<Cs...>);
  using ScratchSet = decltype(scratch_for(Curves{}));
  WorkspacePool<ScratchSet> scratch_{[] { return std::make_unique<ScratchSet>(); }};
};

}  // namespace zkfarm::gpu
