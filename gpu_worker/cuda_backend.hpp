#pragma once
// The CUDA backend of zkfarm-gpu (kernels in gpu_worker/cuda/): H by NTTs and
// the five MSMs on the GPU, the key's points resident on the device. This
// header needs no CUDA headers; without nvcc at build time the functions
// below report the backend as not built.
#include <memory>
#include <optional>
#include <string>

#include "gpu_worker/backend.hpp"

namespace zkfarm::gpu {

/// How a host thread waits for the device (cudaSetDeviceFlags): CUDA's
/// heuristic (spin while the process has fewer contexts than cores), spin,
/// spin yielding the core, or sleep on an interrupt. A spinning wait holds a
/// core per lane for the whole step.
enum class CudaSync { automatic, spin, yield, blocking };

/// The CudaSync named "auto", "spin", "yield" or "block"; nullopt otherwise.
inline std::optional<CudaSync> cuda_sync_of_name(const std::string& name) {
  if (name == "auto") return CudaSync::automatic;
  if (name == "spin") return CudaSync::spin;
  if (name == "yield") return CudaSync::yield;
  if (name == "block") return CudaSync::blocking;
  return std::nullopt;
}

/// How make_cuda_backend sets the backend up; the defaults are what zkfarmd uses.
struct CudaOptions {
  unsigned threads = 0;           ///< CPU threads for tables and key checks (0: all cores)
  double key_memory_share = 0.6;  ///< share (0–1) of the device's memory resident keys may use (LRU beyond)
  bool g2_on_cpu = false;         ///< B2 (the G2 MSM) on the CPU threads while the GPU does the rest
  unsigned window_bits = 0;       ///< MSM window bits 2..24 (0: chosen per size; tests and benchmarks only)
  /// Most precomputed copies of each resident key's MSM bases (1: none; 0:
  /// up to 16, the kernels' limit), within half of the key budget
  /// (docs/gpu.md, "Precomputed bases"). Unset (the default): up to 16 for
  /// keys of domain 2^kMaxSharedLogDomain or less, the keys that run in lanes
  /// (0.99–1.55× a step, 1.10–1.17× in the farm on an H100), none for larger ones
  /// (0–7 % for 13–21 GB at 2^22–2^24): docs/decisions.md, issues 18 and 47.
  std::optional<unsigned> msm_copies;
  CudaSync sync = CudaSync::automatic;  ///< how the prove steps' threads wait for the device
};

/// Whether this build has the CUDA backend and this process sees a CUDA device
/// (device 0 of CUDA_VISIBLE_DEVICES). When not, *why (may be null) says why in
/// one line. Never throws; cheap enough to call once per process.
bool cuda_available(std::string* why);

/// Device 0 in one line: "NAME, 139.8 GiB, 132 SMs, compute capability 9.0"
/// (memory in GiB); "" when there is none. Never throws.
std::string cuda_device_summary();

/// The backend on device 0 (selects it, creates its two streams and the
/// MSM's pinned staging). Throws DeviceError when the device cannot be used.
std::unique_ptr<ProveBackend> make_cuda_backend(const CudaOptions& options);

}  // namespace zkfarm::gpu
