#pragma once
// The proving backends of zkfarm-gpu: the stage after synthesis (H by NTTs,
// the five MSMs) behind one interface, so the worker's protocol code does not
// care whether a GPU or the CPU computes.
#include <atomic>
#include <cstddef>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <variant>

#include "groth16/curve_list.hpp"
#include "groth16/errors.hpp"
#include "groth16/prover.hpp"

namespace zkfarm::gpu {

/// The largest domain (2^N) whose prove steps share the device with others
/// (gpu_worker/lane_gate.hpp); a larger key's steps run alone, and a GPU
/// backend keeps one workspace for them.
inline constexpr uint32_t kMaxSharedLogDomain = 18;

/// A proof over any curve of Curves (ProofOf<C> for the curve proved).
using AnyProof = Curves::Variant<ProofOf>;

/// A fault of the device itself (a CUDA call failed): the context may be
/// unusable, so the worker exits and the supervisor proves the partition again.
struct DeviceError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// A fault of one prove step that left the device usable: a device
/// allocation refused (cudaErrorMemoryAllocation: other lanes' workspaces and
/// the resident keys hold the memory), a launch refused for want of
/// resources. The step's workspace is freed; the worker answers that
/// partition with `device_fault` (docs/protocol.md) and goes on with the
/// others, and the supervisor proves it again (max_attempts).
struct StepFault : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// One way to prove synthesized partitions. load() runs alone (no other
/// call of the backend at the same time); prove_curve(), loaded() and
/// has_key() may run from several threads at once (a worker's lanes), each
/// prove step with its own workspace, over keys no load() can evict meanwhile
/// (gpu_worker/lane_gate.hpp arranges both).
class ProveBackend {
 public:
  virtual ~ProveBackend() = default;

  /// The backend's name as READY reports it: "cpu" or "cuda".
  virtual std::string name() const = 0;

  /// The proving key at `path`, opened and prepared for prove() (for the CPU:
  /// validated and its domain tables built; for a GPU: its points resident on
  /// the device), or found in the backend's cache. The reference stays valid
  /// until the next load(). Throws InputError naming the file and the fault
  /// (also when a GPU backend's share of device memory cannot hold the key);
  /// a GPU backend throws DeviceError when the upload fails.
  virtual const Zkey& load(const std::string& path) = 0;

  /// Whether load(path) would find the key ready in the backend's cache
  /// (the same file, unchanged), without loading it: the worker reports it
  /// with each proof (zkfarm_key_cache_requests_total{cache="worker"}).
  virtual bool has_key(const std::string& path) const = 0;

  /// The key at `path` when load(path) would find it ready (the same file,
  /// unchanged), marked most recently used; nullptr otherwise. Never loads,
  /// uploads or evicts anything, so prove steps of other keys may run
  /// meanwhile. The pointer stays valid until a load() of another key.
  virtual const Zkey* loaded(const std::string& path) = 0;

  /// The proof of one partition from its witness alone, over `curve`: its
  /// ProofOf<C> for the curve C whose kId it is (curve_list.hpp), in the
  /// variant. `witness` holds the key's n_vars canonical values (plain, < r;
  /// 32 bytes each, e.g. a farm slot), which are only read, never written, so
  /// the same slot can be proved again after a crash. The backend synthesizes
  /// a = A·w, b = B·w, c = a∘b itself from the key's ConstraintMatrix (the CPU
  /// on its threads, a GPU on the device), then H and the five MSMs, with
  /// blinding scalars r and s (canonical, below the curve's r). `key` should
  /// come from load(); another key works but is prepared anew. `cancel` (may
  /// be null) is read at stage boundaries (after synthesis, after the NTTs,
  /// between MSMs): once true, the call throws Cancelled. Throws InputError
  /// for a bad key, and for a key over another curve than `curve` (naming the
  /// key file); UnknownCurve for an id of no curve; std::bad_alloc when host
  /// memory runs out; StepFault for a fault of this step alone (the device
  /// still usable, the step's workspace freed); DeviceError for a device
  /// fault that may have left the device unusable. One entry for every
  /// curve, so that no backend or wrapper can lose one: call it through
  /// prove_of<C>.
  virtual AnyProof prove_curve(CurveId curve, const Zkey& key, const U256* witness, const U256& r, const U256& s,
                               const std::atomic<bool>* cancel) = 0;

  /// Host memory that partitions' buffers will live in (the arena), `bytes`
  /// long: a GPU backend page-locks it once (cudaHostRegister) so copies from
  /// it run at the bus's rate. The memory must stay mapped until
  /// unpin_host_memory(base) (or the backend's destruction). CPU: nothing.
  /// Throws DeviceError when the memory cannot be locked (then copies still
  /// work, at pageable speed).
  virtual void pin_host_memory(void* base, size_t bytes) {}
  /// Undoes pin_host_memory(base, …); call it before that memory is freed or
  /// unmapped (HostPin does). Never throws.
  virtual void unpin_host_memory(void* base) {}
};

/// `backend`'s proof over curve C (C: groth16 curve traits, e.g. Bn254):
/// prove_curve(C::kId, …) with the curve's own proof type taken out of the
/// variant. Throws as prove_curve does (InputError for a key of another curve).
template <class C>
ProofOf<C> prove_of(ProveBackend& backend, const Zkey& key, const U256* witness, const U256& r, const U256& s,
                    const std::atomic<bool>* cancel = nullptr) {
  return std::get<ProofOf<C>>(backend.prove_curve(C::kId, key, witness, r, s, cancel));
}

/// Pins [base, base + bytes) with `backend` for this object's life, or warns
/// on stderr (prefixed by `program`) and goes on unpinned when that fails.
/// Declare it after the memory it pins, so it is unpinned first.
class HostPin {
 public:
  HostPin(ProveBackend& backend, void* base, size_t bytes, const char* program) : backend_(backend) {
    try {
      backend.pin_host_memory(base, bytes);
      base_ = base;
    } catch (const DeviceError& e) {
      std::fprintf(stderr, "%s: warning: memory not pinned, copies run at pageable speed: %s\n", program, e.what());
    }
  }
  ~HostPin() {
    if (base_) backend_.unpin_host_memory(base_);
  }
  HostPin(const HostPin&) = delete;
  HostPin& operator=(const HostPin&) = delete;

 private:
  ProveBackend& backend_;
  void* base_ = nullptr;
};

}  // namespace zkfarm::gpu
