#pragma once
// NTTs over a curve's Fr on the GPU for H (steps in ntt_steps.cuh, kernels in
// device_ntt_impl.cuh, instantiated by each curve's .cu). Included by .cu files only.
#include <cstdint>

#include "groth16/bn254.hpp"
#include "gpu_worker/cuda/device_buffer.hpp"

namespace zkfarm::cuda {

/// A domain of 2^log_n points of curve C's Fr (C: groth16 curve traits)
/// resident on the device: twiddles both ways (n·32 bytes) and the coset
/// factor tables (about 2·√n·32 bytes), the same values as the CPU's
/// DomainOf<C>(log_n).
template <class C>
class DeviceDomain {
 public:
  /// Makes the tables on the device on `stream` and waits for it: the host
  /// computes about 3·√n field products (ntt_tables.hpp) and uploads them,
  /// a kernel expands the twiddles. log_n ≤ min(C::kTwoAdicity, 28)
  /// (std::invalid_argument otherwise); 0 holds nothing (the transform is the identity). Throws CudaError.
  DeviceDomain(uint32_t log_n, cudaStream_t stream);

  /// In place on `stream`: `count` vectors of n Fr each (n·32 bytes, Montgomery, device), one after
  /// another from v (16-byte aligned, as cudaMalloc's memory is; count ≤ 65535, the grid's y
  /// limit: std::invalid_argument otherwise), from evaluations over the domain to evaluations over the
  /// odd coset, as Domain::to_odd_coset; the vectors share every launch (the
  /// prover passes A, B and C at once). Passes over memory, when log_n > 10:
  /// 2·⌈(log_n − 10)/6⌉ for the outer stages (ntt_steps.cuh, NttPass: up to 6
  /// radix-2 stages each in shared memory) plus one for the 10 innermost
  /// stages of both transforms and the coset shift. Throws CudaError when a launch fails.
  void to_odd_coset(void* v, cudaStream_t stream, uint32_t count = 1) const;

  /// The resident tables, for tests: ω^j and ω^−j for j < n/2 (device, n/2
  /// DFr each), and the coset's power tables (2^coset_split() and
  /// 2^(log_n − coset_split()) DFr; ntt_tables.hpp).
  const void* twiddles() const { return tw_.get(); }
  const void* twiddles_inv() const { return tw_inv_.get(); }
  const void* coset_lo() const { return lo_.get(); }
  const void* coset_hi() const { return hi_.get(); }
  uint32_t coset_split() const { return h_; }

  /// The most device bytes a domain of 2^log_n points holds: its twiddles
  /// and coset tables, plus the twiddles' small tables while it is built.
  static size_t peak_bytes(uint32_t log_n);

 private:
  uint32_t log_n_, h_;
  DeviceBuffer tw_, tw_inv_, lo_, hi_;
};

/// out[i] = a[i]·b[i] − c[i] in C's Fr, out of Montgomery form (canonical 8
/// words), for i < n; each array n·32 bytes on the device; out may be a. On
/// `stream`. Throws CudaError when the launch fails.
template <class C>
void h_scalars(const void* a, const void* b, const void* c, void* out, size_t n, cudaStream_t stream);

}  // namespace zkfarm::cuda
