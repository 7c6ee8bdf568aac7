#pragma once
// Synthesis on the GPU (step in synth_steps.cuh): a key's A and B matrices by
// constraint resident on the device, built there from the zkey's raw
// section-4 records (device_matrix_build.cu, steps in matrix_build_steps.cuh),
// and the kernel that turns a witness already on the device into a, b, c.
// Included by .cu files only.
#include <cstdint>

#include "groth16/constraint_matrix.hpp"
#include "gpu_worker/cuda/device_buffer.hpp"

namespace zkfarm::cuda {

/// A key's A and B by constraint on the device, in CSR form over `rows` rows
/// (the key's domain size; rows past the last constraint are empty): per
/// matrix (rows + 1)·4 bytes of row starts, and per section-4 record 4 bytes
/// of signal and 32 of coefficient in C's Fr (A's entries, then B's, in one
/// array each). The same arrays, entry for entry, as
/// ConstraintMatrixOf<C>::build makes on the host. C: groth16 curve traits;
/// defined in device_synth_impl.cuh and device_matrix_build_impl.cuh,
/// instantiated by each curve's .cu.
template <class C>
class DeviceMatrix {
 public:
  /// Device bytes at the build's peak for a key of `n_coeffs` records over
  /// `rows` rows: the raw records the caller uploads (n_coeffs·44), the sort's
  /// keys and record indices (double-buffered, n_coeffs·16) and CUB's scratch,
  /// or, later, the result (n_coeffs·36 + 2·(rows + 1)·4) beside the records
  /// and the sorted indices. For the key's memory budget, before the build;
  /// after it the matrix holds resident_bytes(). Throws CudaError (CUB asks
  /// the current device for its scratch size).
  static size_t estimate(size_t rows, size_t n_coeffs);
  /// Device bytes the built matrix keeps: n_coeffs·36 + 2·(rows + 1)·4.
  static size_t resident_bytes(size_t rows, size_t n_coeffs) { return 2 * (rows + 1) * 4 + n_coeffs * 36; }

  /// Builds the matrix on the device from `records`: n_coeffs section-4
  /// records of 44 bytes, in the file's layout and any order, already on the
  /// device (snarkjs src/zkey_utils.js; Zkey::coeffs), over rows ≤ 2^28 rows.
  /// Runs on `stream` and waits for it; its temporaries are freed before it
  /// returns, and `records` is only read (the caller may free it after).
  /// Memory-safe for any record contents, but the arrays are only meaningful
  /// for records Zkey's checks accept (matrix ∈ {0, 1}, constraint < rows,
  /// signal < n_vars). Throws CudaError (e.g. out of device memory),
  /// std::invalid_argument for rows outside 1..2^28.
  DeviceMatrix(const void* records, uint32_t n_coeffs, uint32_t rows, cudaStream_t stream);

  /// On `stream`: a, b, c (rows Fr each, Montgomery, at abc, abc + rows·32,
  /// abc + 2·rows·32 on the device) from `witness` (n_vars plain values on the
  /// device). One thread a row. Throws CudaError when the launch fails.
  void synthesize(const void* witness, void* abc, cudaStream_t stream) const;

  /// The arrays copied back to the host, in ConstraintMatrixOf<C>'s form (tests
  /// compare them with its build). Synchronous. Throws CudaError.
  ConstraintMatrixOf<C> download() const;

  uint32_t rows() const { return rows_; }

 private:
  uint32_t rows_ = 0;
  uint32_t a_entries_ = 0, entries_ = 0;  // B's entries are [a_entries_, entries_) of signal_ and coef_
  DeviceBuffer a_start_, b_start_, signal_, coef_;
};

}  // namespace zkfarm::cuda
