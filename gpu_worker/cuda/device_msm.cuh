#pragma once
// Pippenger MSMs on the GPU (steps in msm_steps.cuh, kernels in
// device_msm_impl.cuh): the digits of one set of scalars are sorted once and
// then accumulated against several point sets (the witness drives A, B1, C
// and B2). Included by .cu files only.
#include <cstdint>
#include <vector>

#include "gpu_worker/cuda/device_buffer.hpp"
#include "gpu_worker/cuda/msm_steps.cuh"
#include "groth16/curve.hpp"

namespace zkfarm::cuda {

/// Runs MSMs of curve C (groth16 curve traits) on one stream; its device
/// buffers grow to the largest MSM seen and are kept for the next. One thread
/// at a time. Defined in device_msm_impl.cuh, instantiated by each curve's .cu.
template <class C>
class MsmRunner {
 public:
  using G1 = Xyzz<typename C::G1Params>;
  using G2 = Xyzz<typename C::G2Params>;
  /// One G1 point set: `points` on the device, n affine points as a zkey
  /// stores them (n·C::kG1Bytes bytes; (0, 0) is infinity), n the run()'s
  /// scalar count; the sum goes to *out (host).
  struct G1Job {
    const void* points;
    G1* out;
  };
  /// The same for G2: n·C::kG2Bytes bytes of affine points over Fq2.
  struct G2Job {
    const void* points;
    G2* out;
  };

  /// Pinned host staging for the results (a few KiB). Throws CudaError.
  MsmRunner();
  ~MsmRunner();
  MsmRunner(const MsmRunner&) = delete;
  MsmRunner& operator=(const MsmRunner&) = delete;

  /// Every job's point set as a precomputed table: `shape` (msm_table_shape),
  /// and `points`, the table's points a copy (its stride; at least run()'s n).
  /// Each job's `points` then holds shape.copies copies (build_g1_table).
  struct Table {
    MsmTableShape shape;
    uint32_t points = 0;
  };

  /// Σ_i k_i·P_i for every job, k_i the n canonical scalars (< 2^C::kFrBits,
  /// 8 words each) at d_scalars on the device. Runs on `stream` and waits for
  /// it (the chunk counts depend on how many digits are non-zero). Scalars
  /// are taken in slices of at most 2^30/W points (the sort's index range).
  /// c_override forces the window bits, 2..24 (tests; std::invalid_argument
  /// otherwise, or when a table has another c). With `table` (all jobs'
  /// point sets built with that shape), the windows fold into
  /// ⌈W/copies⌉ groups (msm_steps.cuh). Throws CudaError on a device fault;
  /// device memory grows to about n·W·16 bytes for the sort plus the buckets
  /// and partial sums.
  void run(const uint32_t* d_scalars, uint32_t n, const std::vector<G1Job>& g1, const std::vector<G2Job>& g2,
           cudaStream_t stream, uint32_t c_override = 0, const Table* table = nullptr);

  /// Fills copies 1..t.copies−1 of the n affine G1 points at d_points (copy 0,
  /// n·C::kG1Bytes bytes, followed by room for the others: t.copies·n points
  /// in all) with 2^(c·k)-multiples (msm_fold_point), on `stream` (not waited
  /// for). Requires t.copies·n < 2^31 and t.copies ≤ kMsmMaxCopies
  /// (std::invalid_argument). Throws CudaError.
  static void build_g1_table(void* d_points, uint32_t n, const MsmTableShape& t, cudaStream_t stream);
  /// The same for G2 points (C::kG2Bytes each).
  static void build_g2_table(void* d_points, uint32_t n, const MsmTableShape& t, cudaStream_t stream);

 private:
  // The bit length of the largest of n scalars (step 0: msm_steps.cuh); waits for the stream.
  uint32_t top_bits(const uint32_t* d_scalars, uint32_t n, cudaStream_t stream);
  uint32_t sort_digits(const uint32_t* d_scalars, const MsmShape& sh, cudaStream_t stream);
  template <class P, class F>
  Xyzz<P> sum_points(const MsmShape& sh, uint32_t count, const DAffine<F>* points, cudaStream_t stream);

  DeviceBuffer keys_[2], vals_[2], sort_temp_, count_, or_words_;
  DeviceBuffer buckets_, part_keys_[2], part_pts_[2], acc_, run_, terms_;
  const uint32_t* sorted_keys_ = nullptr;
  const uint32_t* sorted_vals_ = nullptr;
  uint32_t* host_words_ = nullptr;     // pinned, 8 words: the sort's count, or the scalars' OR
  void* host_terms_ = nullptr;         // pinned, kHostTermsBytes
};

}  // namespace zkfarm::cuda
