#pragma once
// The synthesis kernel of the CUDA backend, templated on the curve and
// instantiated by each curve's .cu; its step is synth_steps.cuh, tested on
// the CPU by tests/gpu_worker/cuda_logic_test.cpp.
#include "gpu_worker/cuda/dcurve.cuh"
#include "gpu_worker/cuda/device_synth.cuh"
#include "gpu_worker/cuda/synth_steps.cuh"

namespace zkfarm::cuda {

namespace {
namespace synth_kernels {

constexpr uint32_t kThreads = 256;

template <class DFr>
__global__ void k_synth(DeviceRows<DFr> a_rows, DeviceRows<DFr> b_rows, uint32_t rows, const DFr* w, DFr* a, DFr* b, DFr* c) {
  const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < rows) synth_row(a_rows, b_rows, i, w, a, b, c);
}

}  // namespace synth_kernels
}  // namespace

template <class C>
void DeviceMatrix<C>::synthesize(const void* witness, void* abc, cudaStream_t stream) const {
  using namespace synth_kernels;
  using DFr = typename DCurve<C>::Fr;
  if (rows_ == 0) return;
  DFr* a = static_cast<DFr*>(abc);
  const DeviceRows<DFr> ar{a_start_.get<uint32_t>(), signal_.get<uint32_t>(), coef_.get<DFr>()};
  const DeviceRows<DFr> br{b_start_.get<uint32_t>(), signal_.get<uint32_t>() + a_entries_, coef_.get<DFr>() + a_entries_};
  k_synth<DFr><<<(rows_ + kThreads - 1) / kThreads, kThreads, 0, stream>>>(ar, br, rows_, static_cast<const DFr*>(witness),
                                                                       a, a + rows_, a + 2 * size_t(rows_));
  ZK_CUDA_LAUNCHED();
}

}  // namespace zkfarm::cuda
