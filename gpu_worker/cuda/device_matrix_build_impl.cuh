#pragma once
// The constraint matrix built on the device from the zkey's raw section-4
// records, so that a replaced GPU worker does no host-side regrouping before
// its first proof (issue 12, "fast key reload"). Steps in
// matrix_build_steps.cuh, emulated on the CPU by tests/gpu_worker/cuda_logic_test.cpp.
// Templated on the curve (the coefficients' field), instantiated by each
// curve's .cu.
#include <cub/device/device_radix_sort.cuh>

#include <algorithm>
#include <bit>
#include <stdexcept>

#include "gpu_worker/cuda/dcurve.cuh"
#include "gpu_worker/cuda/device_synth.cuh"
#include "gpu_worker/cuda/matrix_build_steps.cuh"

namespace zkfarm::cuda {

namespace {
namespace matrix_kernels {

constexpr uint32_t kThreads = 256;

uint32_t blocks_for(uint64_t threads) { return uint32_t((threads + kThreads - 1) / kThreads); }

// Keys are below 2·rows: sorting their low bits only saves radix passes.
int sort_end_bit(uint32_t rows) { return std::bit_width(2 * uint64_t(rows) - 1); }

// CUB's scratch for sorting n pairs in double-buffer mode (a few bytes per
// tile, not per item). Asks the current device; launches nothing.
size_t sort_scratch_bytes(uint32_t n, uint32_t rows) {
  size_t bytes = 0;
  cub::DoubleBuffer<uint32_t> keys(nullptr, nullptr), vals(nullptr, nullptr);
  ZK_CUDA(cub::DeviceRadixSort::SortPairs(nullptr, bytes, keys, vals, n, 0, sort_end_bit(rows)));
  return bytes;
}

__global__ void k_sort_keys(const uint32_t* records, uint32_t n, uint32_t rows, uint32_t* keys, uint32_t* index) {
  const uint32_t k = blockIdx.x * blockDim.x + threadIdx.x;
  if (k >= n) return;
  keys[k] = record_sort_key(records, k, rows);
  index[k] = k;
}

__global__ void k_row_starts(const uint32_t* sorted_keys, uint32_t n, uint32_t rows, uint32_t* a_start,
                             uint32_t* b_start) {
  const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i <= rows) row_starts(i, sorted_keys, n, rows, a_start, b_start);
}

template <class DFr>
__global__ void k_gather(const uint32_t* sorted_records, const uint32_t* records, uint32_t n, uint32_t* signal,
                         DFr* coef) {
  const uint32_t p = blockIdx.x * blockDim.x + threadIdx.x;
  if (p < n) gather_entry(p, sorted_records, records, signal, coef);
}

template <class T>
std::vector<T, UninitAllocator<T>> download_array(const DeviceBuffer& src, size_t offset, size_t count) {
  std::vector<T, UninitAllocator<T>> v(count);
  if (count) ZK_CUDA(cudaMemcpy(v.data(), src.get<T>() + offset, count * sizeof(T), cudaMemcpyDeviceToHost));
  return v;
}

}  // namespace matrix_kernels
}  // namespace

template <class C>
size_t DeviceMatrix<C>::estimate(size_t rows, size_t n_coeffs) {
  using namespace matrix_kernels;
  const size_t records = n_coeffs * 44, starts = 2 * (rows + 1) * 4;
  if (n_coeffs == 0) return starts;
  const size_t sorting = n_coeffs * 16 + sort_scratch_bytes(uint32_t(n_coeffs), uint32_t(rows));
  const size_t gathering = n_coeffs * 4 + n_coeffs * 36;  // the sorted indices, signal and coef
  return records + starts + std::max(sorting, gathering);
}

template <class C>
DeviceMatrix<C>::DeviceMatrix(const void* records, uint32_t n_coeffs, uint32_t rows, cudaStream_t st)
    : rows_(rows), entries_(n_coeffs) {
  using namespace matrix_kernels;
  using DFr = typename DCurve<C>::Fr;
  if (rows == 0 || rows > (1u << kMaxLogDomain)) throw std::invalid_argument("DeviceMatrix: rows must be 1..2^28");
  a_start_.reserve((size_t(rows) + 1) * 4);
  b_start_.reserve((size_t(rows) + 1) * 4);
  if (n_coeffs == 0) {  // every row empty
    ZK_CUDA(cudaMemsetAsync(a_start_.get(), 0, (size_t(rows) + 1) * 4, st));
    ZK_CUDA(cudaMemsetAsync(b_start_.get(), 0, (size_t(rows) + 1) * 4, st));
    ZK_CUDA(cudaStreamSynchronize(st));
    return;
  }
  const auto* recs = static_cast<const uint32_t*>(records);
  const size_t n = n_coeffs;
  DeviceBuffer keys[2], index[2], scratch;
  for (int i = 0; i < 2; ++i) {
    keys[i].reserve(n * 4);
    index[i].reserve(n * 4);
  }
  k_sort_keys<<<blocks_for(n), kThreads, 0, st>>>(recs, n_coeffs, rows, keys[0].get<uint32_t>(),
                                                   index[0].get<uint32_t>());
  ZK_CUDA_LAUNCHED();
  // Stable: a row's entries keep the file's order, as on the host.
  cub::DoubleBuffer<uint32_t> k(keys[0].get<uint32_t>(), keys[1].get<uint32_t>());
  cub::DoubleBuffer<uint32_t> v(index[0].get<uint32_t>(), index[1].get<uint32_t>());
  size_t scratch_bytes = sort_scratch_bytes(n_coeffs, rows);
  scratch.reserve(std::max<size_t>(scratch_bytes, 1));
  ZK_CUDA(cub::DeviceRadixSort::SortPairs(scratch.get(), scratch_bytes, k, v, n_coeffs, 0, sort_end_bit(rows), st));
  k_row_starts<<<blocks_for(size_t(rows) + 1), kThreads, 0, st>>>(k.Current(), n_coeffs, rows,
                                                                   a_start_.get<uint32_t>(), b_start_.get<uint32_t>());
  ZK_CUDA_LAUNCHED();
  ZK_CUDA(cudaMemcpyAsync(&a_entries_, a_start_.get<uint32_t>() + rows, 4, cudaMemcpyDeviceToHost, st));
  ZK_CUDA(cudaStreamSynchronize(st));
  // The keys and the spare halves are done: free them before the result is
  // allocated, so the peak is the larger of the two phases, not their sum.
  const int current = v.selector;
  keys[0].release();
  keys[1].release();
  index[1 - current].release();
  scratch.release();
  signal_.reserve(n * 4);
  coef_.reserve(n * sizeof(DFr));
  k_gather<DFr><<<blocks_for(n), kThreads, 0, st>>>(index[current].get<uint32_t>(), recs, n_coeffs,
                                               signal_.get<uint32_t>(), coef_.get<DFr>());
  ZK_CUDA_LAUNCHED();
  ZK_CUDA(cudaStreamSynchronize(st));
}

template <class C>
ConstraintMatrixOf<C> DeviceMatrix<C>::download() const {
  using namespace matrix_kernels;
  using Fr = typename C::Fr;
  ConstraintMatrixOf<C> m;
  const size_t rows = rows_;
  auto starts = [&](const DeviceBuffer& d) {
    std::vector<uint32_t> s(rows + 1);
    ZK_CUDA(cudaMemcpy(s.data(), d.get(), (rows + 1) * 4, cudaMemcpyDeviceToHost));
    return s;
  };
  m.a.start = starts(a_start_);
  m.b.start = starts(b_start_);
  m.a.signal = download_array<uint32_t>(signal_, 0, a_entries_);
  m.b.signal = download_array<uint32_t>(signal_, a_entries_, entries_ - a_entries_);
  m.a.coef = download_array<Fr>(coef_, 0, a_entries_);
  m.b.coef = download_array<Fr>(coef_, a_entries_, entries_ - a_entries_);
  return m;
}

}  // namespace zkfarm::cuda
