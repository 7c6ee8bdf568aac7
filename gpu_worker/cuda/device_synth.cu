// The synthesis kernel of the CUDA backend; its step is synth_steps.cuh,
// tested on the CPU by tests/cuda_logic_test.cpp.
#include "gpu_worker/cuda/device_synth.cuh"
#include "gpu_worker/cuda/synth_steps.cuh"

namespace zkfarm::cuda {

namespace {

constexpr uint32_t kThreads = 256;

__global__ void k_synth(DeviceRows a_rows, DeviceRows b_rows, uint32_t rows, const DFr* w, DFr* a, DFr* b, DFr* c) {
  const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < rows) synth_row(a_rows, b_rows, i, w, a, b, c);
}

template <class V>
void upload(DeviceBuffer& dst, const V& src, const DeviceMatrix::Upload& copy) {
  const size_t bytes = src.size() * sizeof(src[0]);
  dst.reserve(bytes ? bytes : 1);
  if (bytes) copy(dst.get(), src.data(), bytes);
}

}  // namespace

DeviceMatrix::DeviceMatrix(const ConstraintMatrix& m, const Upload& copy) : rows_(uint32_t(m.a.rows())) {
  static_assert(sizeof(Fr) == sizeof(DFr), "host and device field elements share their 32 bytes");
  upload(a_start_, m.a.start, copy);
  upload(a_signal_, m.a.signal, copy);
  upload(a_coef_, m.a.coef, copy);
  upload(b_start_, m.b.start, copy);
  upload(b_signal_, m.b.signal, copy);
  upload(b_coef_, m.b.coef, copy);
}

void DeviceMatrix::synthesize(const void* witness, void* abc, cudaStream_t stream) const {
  if (rows_ == 0) return;
  DFr* a = static_cast<DFr*>(abc);
  const DeviceRows ar{a_start_.get<uint32_t>(), a_signal_.get<uint32_t>(), a_coef_.get<DFr>()};
  const DeviceRows br{b_start_.get<uint32_t>(), b_signal_.get<uint32_t>(), b_coef_.get<DFr>()};
  k_synth<<<(rows_ + kThreads - 1) / kThreads, kThreads, 0, stream>>>(ar, br, rows_, static_cast<const DFr*>(witness),
                                                                       a, a + rows_, a + 2 * size_t(rows_));
  ZK_CUDA_LAUNCHED();
}

}  // namespace zkfarm::cuda
