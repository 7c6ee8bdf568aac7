#pragma once
// NTTs over Fr on the GPU for H (steps in ntt_steps.cuh). Included by .cu files only.
#include <cstdint>

#include "groth16/ntt.hpp"
#include "gpu_worker/cuda/device_buffer.hpp"

namespace zkfarm::cuda {

/// A domain of 2^log_n points resident on the device: twiddles both ways
/// (n·32 bytes) and the coset factor tables (about 2·√n·32 bytes).
class DeviceDomain {
 public:
  /// Uploads `d`'s twiddles and its coset factors (ntt_tables.hpp) on the
  /// legacy default stream: work on a non-blocking stream must wait for a
  /// device sync first (the CUDA backend's make_resident does one). Throws CudaError.
  explicit DeviceDomain(const Domain& d);

  /// In place on `stream`: v (n Fr = n·32 bytes, Montgomery, device) from evaluations over
  /// the domain to evaluations over the odd coset, as Domain::to_odd_coset.
  /// Passes over memory: 2·(log_n − 10) radix-2 stages plus one pass for the
  /// 10 innermost stages of both transforms and the coset shift.
  void to_odd_coset(void* v, cudaStream_t stream) const;

 private:
  uint32_t log_n_, h_;
  DeviceBuffer tw_, tw_inv_, lo_, hi_;
};

/// out[i] = a[i]·b[i] − c[i] out of Montgomery form (canonical 8 words), for
/// i < n; each array n·32 bytes on the device; out may be a. On `stream`.
/// Throws CudaError when the launch fails.
void h_scalars(const void* a, const void* b, const void* c, void* out, size_t n, cudaStream_t stream);

}  // namespace zkfarm::cuda
