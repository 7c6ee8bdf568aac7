#pragma once
// The per-thread steps of the constraint matrix's build on the GPU
// (device_matrix_build.cu), shared with the host emulation in
// tests/gpu_worker/cuda_logic_test.cpp, which checks them against
// groth16::ConstraintMatrix::build for any record order.
//
// Input: the zkey's section-4 records as the file holds them (snarkjs
// src/zkey_utils.js, "coefs"; groth16/zkey.hpp), 44 bytes = 11 little-endian
// words each: {matrix (0 = A, 1 = B), constraint, signal, value[8]}. Output:
// the CSR arrays of DeviceMatrix (synth_steps.cuh), A's and B's rows by
// constraint. The build, one kernel a step:
//   1. sort key of record k: matrix·rows + constraint, value k;
//   2. a stable radix sort of the (key, k) pairs (CUB): the A entries come
//      first, B's after them, each row's in file order — the order
//      ConstraintMatrix::build gives them, so the arrays are the CPU's bit for bit;
//   3. row starts, one thread a row, by binary search in the sorted keys
//      (empty rows and rows past the last constraint need no special case);
//   4. the gather of each sorted entry's signal and value from its record.
// Every step stays inside its arrays whatever the records hold (the CUDA
// backend builds while Zkey's content checks still run, and drops the result
// of a key that fails them).
#include <cstdint>

#include "gpu_worker/cuda/dfield.cuh"

namespace zkfarm::cuda {

/// 32-bit words of one section-4 record (kCoeffRecordBytes / 4).
inline constexpr uint32_t kCoeffRecordWords = 11;

/// Step 1: the sort key of record k over `rows` rows a matrix: A's rows are
/// keys 0 … rows−1, B's rows … 2·rows−1 (< 2^29: rows ≤ 2^28).
ZK_HD uint32_t record_sort_key(const uint32_t* records, uint32_t k, uint32_t rows) {
  const uint32_t* r = records + size_t(k) * kCoeffRecordWords;
  return (r[0] & 1u) * rows + r[1];  // matrix ∈ {0, 1} once Zkey's checks pass
}

/// The first position in sorted keys[0, n) whose key is ≥ x (n when none).
ZK_HD uint32_t lower_bound(const uint32_t* keys, uint32_t n, uint32_t x) {
  uint32_t lo = 0, hi = n;
  while (lo < hi) {
    const uint32_t mid = lo + (hi - lo) / 2;
    if (keys[mid] < x) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo;
}

/// Step 3, for i ≤ rows: a_start[i] and b_start[i], row i's first entry in
/// A's and B's arrays (B's counted from B's first entry, as in SparseRows).
/// sorted_keys: the n sorted keys of step 2.
ZK_HD void row_starts(uint32_t i, const uint32_t* sorted_keys, uint32_t n, uint32_t rows, uint32_t* a_start,
                      uint32_t* b_start) {
  const uint32_t b_first = lower_bound(sorted_keys, n, rows);
  a_start[i] = lower_bound(sorted_keys, n, i);
  b_start[i] = lower_bound(sorted_keys, n, rows + i) - b_first;
}

/// Step 4, for sorted position p < n: the signal and the 32-byte value (v·R²,
/// Montgomery, loaded as stored) of the record sorted to p. signal and coef
/// hold A's entries then B's, so B's arrays start at b_first = a_start[rows].
template <class DFr>
ZK_HD void gather_entry(uint32_t p, const uint32_t* sorted_records, const uint32_t* records, uint32_t* signal,
                        DFr* coef) {
  const uint32_t* r = records + size_t(sorted_records[p]) * kCoeffRecordWords;
  signal[p] = r[2];
  DFr v;
  ZK_UNROLL for (int w = 0; w < DFr::N; ++w) v.l[w] = r[3 + w];
  coef[p] = v;
}

}  // namespace zkfarm::cuda
