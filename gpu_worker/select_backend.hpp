#pragma once
// Which backend a process proves with: the one choice zkfarm-gpu and
// zkfarm-prove share (--backend cpu|cuda|auto).
#include <memory>
#include <string>

#include "gpu_worker/cuda_backend.hpp"

namespace zkfarm::gpu {

/// The backend `name` asks for: "cpu"; "cuda"; or "auto", which is CUDA when
/// this build has it and device 0 can be set up, else the CPU (with a warning
/// on stderr, prefixed by `program`, when a device is seen but cannot be used).
/// `cuda.threads` also sizes the CPU backend's pool. Throws DeviceError for
/// "cuda" when CUDA cannot be used; its message says why.
std::unique_ptr<ProveBackend> make_backend(const std::string& name, const CudaOptions& cuda, const std::string& program);

}  // namespace zkfarm::gpu
