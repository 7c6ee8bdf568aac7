#include "gpu_worker/select_backend.hpp"

#include <cstdio>

#include "gpu_worker/cpu_backend.hpp"

namespace zkfarm::gpu {

std::unique_ptr<ProveBackend> make_backend(const std::string& name, const CudaOptions& cuda, const std::string& program) {
  if (name == "cpu") return std::make_unique<CpuBackend>(cuda.threads);
  std::string why;
  if (!cuda_available(&why)) {
    if (name == "cuda") throw DeviceError(why);
    return std::make_unique<CpuBackend>(cuda.threads);
  }
  try {
    return make_cuda_backend(cuda);
  } catch (const DeviceError& e) {
    if (name == "cuda") throw;
    std::fprintf(stderr, "%s: warning: CUDA device not usable (%s); using the cpu backend\n", program.c_str(), e.what());
    return std::make_unique<CpuBackend>(cuda.threads);
  }
}

}  // namespace zkfarm::gpu
