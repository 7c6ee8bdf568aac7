#pragma once
// The per-thread step of synthesis on the GPU (device_synth.cu), shared with
// the host emulation in tests/gpu_worker/cuda_logic_test.cpp: one thread computes one
// constraint's a = Σ A[i][j]·w[j], b likewise, c = a·b from the key's
// ConstraintMatrix (groth16/constraint_matrix.hpp) in CSR form. Coefficients
// are stored as v·R², witness values plain, so each Montgomery product yields
// a Montgomery-form term, exactly as groth16::synthesize_abc computes it.
#include <cstdint>

#include "gpu_worker/cuda/dfield.cuh"

namespace zkfarm::cuda {

/// One matrix in CSR form on the device (DFr: DCurve<C>::Fr): row i is entries [start[i], start[i+1]).
template <class DFr>
struct DeviceRows {
  const uint32_t* start;
  const uint32_t* signal;
  const DFr* coef;
};

/// Σ over row i's entries of coef·w[signal] (Montgomery).
template <class DFr>
ZK_HD DFr row_sum(const DeviceRows<DFr>& m, uint32_t i, const DFr* w) {
  DFr acc = DFr::zero();
  for (uint32_t k = m.start[i], e = m.start[i + 1]; k < e; ++k) acc += m.coef[k] * w[m.signal[k]];
  return acc;
}

/// Row i of synthesis: a[i], b[i] and c[i] = a[i]·b[i].
template <class DFr>
ZK_HD void synth_row(const DeviceRows<DFr>& a_rows, const DeviceRows<DFr>& b_rows, uint32_t i, const DFr* w, DFr* a, DFr* b,
                     DFr* c) {
  const DFr x = row_sum(a_rows, i, w), y = row_sum(b_rows, i, w);
  a[i] = x;
  b[i] = y;
  c[i] = x * y;
}

}  // namespace zkfarm::cuda
