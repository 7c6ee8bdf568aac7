#pragma once
// Every CUDA runtime call of the backend goes through ZK_CUDA: a failure
// throws CudaError naming the call, the source line and CUDA's message. The
// worker answers one by exiting, so the supervisor proves the partition again
// and restarts the worker (a sticky device error poisons the whole context).
#include <cuda_runtime.h>

#include <string>

#include "gpu_worker/backend.hpp"

namespace zkfarm::cuda {

struct CudaError : gpu::DeviceError {
  using gpu::DeviceError::DeviceError;
};

[[noreturn]] inline void throw_cuda(cudaError_t e, const char* call, const char* file, int line) {
  throw CudaError(std::string("CUDA error ") + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ") in " + call +
                  " at " + file + ":" + std::to_string(line));
}

}  // namespace zkfarm::cuda

#define ZK_CUDA(call)                                                                    \
  do {                                                                                   \
    cudaError_t zk_cuda_status_ = (call);                                                \
    if (zk_cuda_status_ != cudaSuccess) ::zkfarm::cuda::throw_cuda(zk_cuda_status_, #call, __FILE__, __LINE__); \
  } while (0)

/// After a kernel launch: a bad configuration shows here, a fault at the next sync.
#define ZK_CUDA_LAUNCHED() ZK_CUDA(cudaGetLastError())
