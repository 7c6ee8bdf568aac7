#pragma once
// Synthesis on the GPU (step in synth_steps.cuh): a key's ConstraintMatrix
// resident on the device, and the kernel that turns a witness already on the
// device into a, b, c. Included by .cu files only.
#include <cstdint>
#include <functional>

#include "groth16/constraint_matrix.hpp"
#include "gpu_worker/cuda/device_buffer.hpp"

namespace zkfarm::cuda {

/// A key's A and B by constraint on the device: per matrix (rows + 1)·4 bytes
/// of offsets, 4 bytes of signal and 32 of coefficient per entry.
class DeviceMatrix {
 public:
  /// Device bytes the matrix of a key with `n_coeffs` records over `rows`
  /// constraints takes (for the key's memory budget, before it is built).
  static size_t estimate(size_t rows, size_t n_coeffs) { return 2 * (rows + 1) * 4 + n_coeffs * 36; }

  /// Copies host bytes to device memory (the CUDA backend passes its staged
  /// uploader; the copies must be complete before synthesize() runs).
  using Upload = std::function<void(void* device_dst, const void* host_src, size_t bytes)>;

  /// Uploads `m` with `upload`. Throws CudaError.
  DeviceMatrix(const ConstraintMatrix& m, const Upload& upload);

  /// On `stream`: a, b, c (rows Fr each, Montgomery, at abc, abc + rows·32,
  /// abc + 2·rows·32 on the device) from `witness` (n_vars plain values on the
  /// device). One thread a row. Throws CudaError when the launch fails.
  void synthesize(const void* witness, void* abc, cudaStream_t stream) const;

  uint32_t rows() const { return rows_; }

 private:
  uint32_t rows_ = 0;
  DeviceBuffer a_start_, a_signal_, a_coef_, b_start_, b_signal_, b_coef_;
};

}  // namespace zkfarm::cuda
