// The CUDA backend's entry points in a build without nvcc: never available.
#include "gpu_worker/cuda_backend.hpp"

namespace zkfarm::gpu {

bool cuda_available(std::string* why) {
  if (why) *why = "this zkfarm was built without CUDA (no nvcc at build time)";
  return false;
}

std::string cuda_device_summary() { return ""; }

std::unique_ptr<ProveBackend> make_cuda_backend(const CudaOptions&) {
  throw DeviceError("this zkfarm was built without CUDA (no nvcc at build time)");
}

}  // namespace zkfarm::gpu
