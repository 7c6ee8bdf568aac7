#pragma once
// A test double for device faults: wraps a backend and throws on its
// (N+1)-th prove, as a failed CUDA call would:
//   ZKFARM_TEST_DEVICE_ERROR_AFTER=N  DeviceError, a device left unusable
//                                     (tests/farm/test_lifecycle.py: the
//                                     worker exits, the partition is proved
//                                     again elsewhere);
//   ZKFARM_TEST_STEP_FAULT_AFTER=N    StepFault, once: one step's device
//                                     allocation refused, the device usable
//                                     (tests/farm/test_faults.py: that
//                                     partition alone is proved again, the
//                                     other lanes and the worker go on).
// So the worker's answers to device faults are tested where there is no GPU.
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>

#include "gpu_worker/backend.hpp"

namespace zkfarm::gpu {

class DeviceFaultBackend final : public ProveBackend {
 public:
  /// The (after+1)-th prove throws: DeviceError, or (step) StepFault.
  DeviceFaultBackend(std::unique_ptr<ProveBackend> inner, uint64_t after, bool step = false)
      : inner_(std::move(inner)), after_(after), step_(step) {}

  /// `inner` itself unless ZKFARM_TEST_DEVICE_ERROR_AFTER or
  /// ZKFARM_TEST_STEP_FAULT_AFTER holds a number (the first wins).
  static std::unique_ptr<ProveBackend> wrap_from_env(std::unique_ptr<ProveBackend> inner) {
    for (const char* name : {"ZKFARM_TEST_DEVICE_ERROR_AFTER", "ZKFARM_TEST_STEP_FAULT_AFTER"}) {
      const char* v = std::getenv(name);
      if (v && *v)
        return std::make_unique<DeviceFaultBackend>(std::move(inner), std::strtoull(v, nullptr, 10),
                                                    std::string_view(name) == "ZKFARM_TEST_STEP_FAULT_AFTER");
    }
    return inner;
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
    if (proved_++ != after_) return;
    if (step_)
      throw StepFault("simulated device allocation refused in one prove step (ZKFARM_TEST_STEP_FAULT_AFTER=" +
                      std::to_string(after_) + ")");
    throw DeviceError("simulated device error (ZKFARM_TEST_DEVICE_ERROR_AFTER=" + std::to_string(after_) + ")");
  }
  std::unique_ptr<ProveBackend> inner_;
  uint64_t after_;
  bool step_;
  std::atomic<uint64_t> proved_{0};
};

}  // namespace zkfarm::gpu
