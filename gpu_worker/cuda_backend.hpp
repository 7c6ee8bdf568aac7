#pragma once
// The CUDA backend of zkfarm-gpu (kernels in gpu_worker/cuda/): H by NTTs and
// the five MSMs on the GPU, the key's points resident on the device. This
// header needs no CUDA headers; without nvcc at build time the functions
// below report the backend as not built.
#include <memory>
#include <string>

#include "gpu_worker/backend.hpp"

namespace zkfarm::gpu {

struct CudaOptions {
  unsigned threads = 0;           ///< CPU threads for tables and key checks (0: all cores)
  double key_memory_share = 0.6;  ///< share (0–1) of the device's memory resident keys may use (LRU beyond)
  bool g2_on_cpu = false;         ///< B2 (the G2 MSM) on the CPU threads while the GPU does the rest
  unsigned window_bits = 0;       ///< MSM window bits (0: chosen per size; tests and benchmarks only)
};

/// Whether this build has the CUDA backend and this process sees a CUDA device
/// (device 0 of CUDA_VISIBLE_DEVICES). When not, *why says why (one line).
bool cuda_available(std::string* why);

/// The GPU's name and memory, one line ("" when none).
std::string cuda_device_summary();

/// The backend on device 0. Throws DeviceError when the device cannot be used.
std::unique_ptr<ProveBackend> make_cuda_backend(const CudaOptions& options);

}  // namespace zkfarm::gpu
