#pragma once
// A test double for device faults: wraps a backend and throws DeviceError on
// its (N+1)-th prove, as a failed CUDA call would. Enabled only by
// ZKFARM_TEST_DEVICE_ERROR_AFTER=N (tests/farm/test_lifecycle.py), so the
// worker's answer to a device fault (exit, partition proved again elsewhere)
// is tested where there is no GPU.
#include <cstdlib>
#include <memory>
#include <string>

#include "gpu_worker/backend.hpp"

namespace zkfarm::gpu {

class DeviceFaultBackend final : public ProveBackend {
 public:
  DeviceFaultBackend(std::unique_ptr<ProveBackend> inner, uint64_t after) : inner_(std::move(inner)), after_(after) {}

  /// `inner` itself unless ZKFARM_TEST_DEVICE_ERROR_AFTER holds a number.
  static std::unique_ptr<ProveBackend> wrap_from_env(std::unique_ptr<ProveBackend> inner) {
    const char* v = std::getenv("ZKFARM_TEST_DEVICE_ERROR_AFTER");
    if (!v || !*v) return inner;
    return std::make_unique<DeviceFaultBackend>(std::move(inner), std::strtoull(v, nullptr, 10));
  }

  std::string name() const override { return inner_->name(); }
  const Zkey& load(const std::string& path) override { return inner_->load(path); }
  bool has_key(const std::string& path) const override { return inner_->has_key(path); }
  const Zkey* loaded(const std::string& path) override { return inner_->loaded(path); }
  void pin_host_memory(void* base, size_t bytes) override { inner_->pin_host_memory(base, bytes); }
  void unpin_host_memory(void* base) override { inner_->unpin_host_memory(base); }
  AnyProof prove_curve(CurveId curve, const Zkey& key, const U256* witness, const U256& r, const U256& s,
                       const std::atomic<bool>* cancel) override {
    count_proof();
    return inner_->prove_curve(curve, key, witness, r, s, cancel);
  }

 private:
  // Proofs of either curve count toward the simulated fault.
  void count_proof() {
    if (proved_++ == after_)
      throw DeviceError("simulated device error (ZKFARM_TEST_DEVICE_ERROR_AFTER=" + std::to_string(after_) + ")");
  }
  std::unique_ptr<ProveBackend> inner_;
  uint64_t after_;
  std::atomic<uint64_t> proved_{0};
};

}  // namespace zkfarm::gpu
