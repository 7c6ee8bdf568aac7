#pragma once
// Device memory owned by one object (cudaMalloc/cudaFree), grown on demand and
// kept between partitions so a steady stream of one key allocates nothing.
#include <cstddef>
#include <utility>

#include "gpu_worker/cuda/cuda_check.hpp"

namespace zkfarm::cuda {

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t bytes) { reserve(bytes); }
  ~DeviceBuffer() { release(); }
  DeviceBuffer(DeviceBuffer&& o) noexcept : p_(std::exchange(o.p_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) {
      release();
      p_ = std::exchange(o.p_, nullptr);
      bytes_ = std::exchange(o.bytes_, 0);
    }
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  /// At least `bytes` bytes (old contents lost when it grows). Throws CudaError
  /// (cudaErrorMemoryAllocation) when the device has too little free.
  void reserve(size_t bytes) {
    if (bytes <= bytes_) return;
    release();
    void* p = nullptr;
    ZK_CUDA(cudaMalloc(&p, bytes));
    p_ = p;
    bytes_ = bytes;
  }
  void release() {
    if (p_) cudaFree(p_);  // cannot fail usefully in a destructor; a sticky error shows elsewhere
    p_ = nullptr;
    bytes_ = 0;
  }
  template <class T = void>
  T* get() const {
    return static_cast<T*>(p_);
  }
  size_t bytes() const { return bytes_; }

 private:
  void* p_ = nullptr;
  size_t bytes_ = 0;
};

}  // namespace zkfarm::cuda
