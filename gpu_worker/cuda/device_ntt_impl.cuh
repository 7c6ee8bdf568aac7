#pragma once
// Kernels of the GPU's odd-coset NTT, templated on the curve and instantiated
// by each curve's .cu; bodies in ntt_steps.cuh, tested on the CPU by
// tests/gpu_worker/cuda_logic_test.cpp.
#include <algorithm>

#include <stdexcept>

#include "gpu_worker/cuda/dcurve.cuh"
#include "gpu_worker/cuda/device_ntt.cuh"
#include "gpu_worker/cuda/ntt_steps.cuh"
#include "gpu_worker/cuda/ntt_tables.hpp"

namespace zkfarm::cuda {

namespace {
namespace ntt_kernels {

constexpr uint32_t kThreads = 256;
static_assert((kMaxLogDomain - kNttInnerBits + kNttPassStages - 1) / kNttPassStages <= 4,
              "NttPasses holds 4 passes: the largest domain needs no more");

// 32-byte elements move as two 16-byte words: granule u of a group is half
// u & 1 of its element u >> 1, so a warp reads 512 contiguous bytes.
template <class DFr>
__device__ void copy_granule(DFr* dst, const DFr* src, uint32_t u) {
  static_assert(sizeof(DFr) == 32, "Fr of 8 words");
  reinterpret_cast<uint4*>(dst)[u & 1] = reinterpret_cast<const uint4*>(src)[u & 1];
}

// One pass of outer stages (ntt_steps.cuh, NttPass) on group blockIdx.x of
// vector blockIdx.y (vectors n elements apart): DIF stages from the widest
// down, or DIT stages from the narrowest up.
template <class DFr>
__global__ void __launch_bounds__(kThreads) k_pass(DFr* data, uint32_t log_n, NttPass p, const DFr* tw, bool dit) {
  extern __shared__ __align__(16) unsigned char smem[];
  DFr* s = reinterpret_cast<DFr*>(smem);
  DFr* v = data + (size_t(blockIdx.y) << log_n);
  const uint32_t g = blockIdx.x, size = 1u << p.group_bits();
  for (uint32_t u = threadIdx.x; u < 2 * size; u += blockDim.x)
    copy_granule(s + (u >> 1), v + ntt_group_index(g, u >> 1, p), u);
  __syncthreads();
  for (uint32_t step = 0; step < p.s; ++step) {
    const uint32_t r = dit ? step : p.s - 1 - step;
    for (uint32_t k = threadIdx.x; k < size / 2; k += blockDim.x) {
      uint32_t x, t;
      ntt_group_pair(g, k, r, p, log_n, x, t);
      DFr& a = s[x];
      DFr& b = s[x + (1u << (kNttRunBits + r))];
      if (dit) {
        butterfly_dit(a, b, tw[t]);
      } else {
        butterfly_dif(a, b, tw[t]);
      }
    }
    __syncthreads();
  }
  for (uint32_t u = threadIdx.x; u < 2 * size; u += blockDim.x)
    copy_granule(v + ntt_group_index(g, u >> 1, p), s + (u >> 1), u);
}

// The stages inside one block of 2^log_b elements: the inverse transform's
// last (DIF, half-widths 2^(log_b−1) … 1), the coset shift, the forward
// transform's first (DIT, 1 … 2^(log_b−1)). Shared positions are the global
// ones minus the block's base, so the twiddle indices are the global stage's.
// Block blockIdx.x of vector blockIdx.y.
template <class DFr>
__global__ void k_inner(DFr* data, uint32_t log_n, uint32_t log_b, const DFr* tw, const DFr* tw_inv, const DFr* lo,
                        const DFr* hi, uint32_t h) {
  extern __shared__ __align__(16) unsigned char smem[];
  DFr* s = reinterpret_cast<DFr*>(smem);
  DFr* v = data + (size_t(blockIdx.y) << log_n);
  const uint32_t b = 1u << log_b, base = blockIdx.x << log_b;
  for (uint32_t u = threadIdx.x; u < 2 * b; u += blockDim.x) copy_granule(s + (u >> 1), v + base + (u >> 1), u);
  __syncthreads();
  for (int lm = int(log_b) - 1; lm >= 0; --lm) {
    for (uint32_t k = threadIdx.x; k < b / 2; k += blockDim.x) {
      uint32_t i, t;
      ntt_pair(k, lm, log_n, i, t);
      butterfly_dif(s[i], s[i + (1u << lm)], tw_inv[t]);
    }
    __syncthreads();
  }
  for (uint32_t x = threadIdx.x; x < b; x += blockDim.x) s[x] = s[x] * coset_factor(base + x, log_n, h, lo, hi);
  __syncthreads();
  for (uint32_t lm = 0; lm < log_b; ++lm) {
    for (uint32_t k = threadIdx.x; k < b / 2; k += blockDim.x) {
      uint32_t i, t;
      ntt_pair(k, lm, log_n, i, t);
      butterfly_dit(s[i], s[i + (1u << lm)], tw[t]);
    }
    __syncthreads();
  }
  for (uint32_t u = threadIdx.x; u < 2 * b; u += blockDim.x) copy_granule(v + base + (u >> 1), s + (u >> 1), u);
}

template <class DFr>
__global__ void k_h(const DFr* a, const DFr* b, const DFr* c, DFr* out, size_t n) {
  const size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) out[i] = h_scalar(a[i], b[i], c[i]);
}

// tw[j] = x^j for j < count, from its power tables.
template <class DFr>
__global__ void k_powers(DFr* out, uint32_t count, uint32_t h, const DFr* lo, const DFr* hi) {
  const uint32_t j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j < count) out[j] = power_from_tables(j, h, lo, hi);
}

template <class Fr>
void upload(DeviceBuffer& dst, const std::vector<Fr>& src, cudaStream_t st) {
  dst.reserve(src.size() * sizeof(Fr));
  ZK_CUDA(cudaMemcpyAsync(dst.get(), src.data(), src.size() * sizeof(Fr), cudaMemcpyHostToDevice, st));
}

// out (count = 2^log_count DFr, reserved here) = the powers `t` stands for.
template <class DFr, class Fr>
void expand(DeviceBuffer& out, const PowerTables<Fr>& t, uint32_t log_count, cudaStream_t st) {
  const uint32_t count = 1u << log_count;
  DeviceBuffer lo, hi;
  upload(lo, t.lo, st);
  upload(hi, t.hi, st);
  out.reserve(size_t(count) * sizeof(DFr));
  k_powers<DFr><<<(count + kThreads - 1) / kThreads, kThreads, 0, st>>>(out.get<DFr>(), count, t.h, lo.get<DFr>(),
                                                                   hi.get<DFr>());
  ZK_CUDA_LAUNCHED();
  ZK_CUDA(cudaStreamSynchronize(st));  // before lo and hi are freed
}

}  // namespace ntt_kernels
}  // namespace

template <class C>
size_t DeviceDomain<C>::peak_bytes(uint32_t log_n) {
  if (log_n == 0) return 0;
  auto tables = [](uint32_t log_count) {
    const uint32_t h = (log_count + 1) / 2;
    return (size_t(1) << h) + (size_t(1) << (log_count - h));
  };
  return ((size_t(1) << log_n) + tables(log_n - 1) + tables(log_n)) * sizeof(typename C::Fr);
}

template <class C>
DeviceDomain<C>::DeviceDomain(uint32_t log_n, cudaStream_t st) : log_n_(log_n), h_(0) {
  using namespace ntt_kernels;
  using DFr = typename DCurve<C>::Fr;
  if (log_n_ == 0) return;  // one point: the transform is the identity
  if (log_n > kMaxLogDomain) throw std::invalid_argument("DeviceDomain: log_n must be at most 28");
  const DomainTables<C> t = domain_tables<C>(log_n);  // throws std::invalid_argument past C's 2-adicity
  h_ = t.coset.h;
  expand<DFr>(tw_, t.tw, log_n - 1, st);
  expand<DFr>(tw_inv_, t.tw_inv, log_n - 1, st);
  upload(lo_, t.coset.lo, st);
  upload(hi_, t.coset.hi, st);
  ZK_CUDA(cudaStreamSynchronize(st));  // the host tables go when this returns
}

template <class C>
void DeviceDomain<C>::to_odd_coset(void* data, cudaStream_t st, uint32_t count) const {
  using namespace ntt_kernels;
  using DFr = typename DCurve<C>::Fr;
  if (count > 65535) throw std::invalid_argument("DeviceDomain::to_odd_coset: at most 65535 vectors a call");
  if (log_n_ == 0 || count == 0) return;
  DFr* v = static_cast<DFr*>(data);
  const DFr* tw = tw_.get<DFr>();
  const DFr* twi = tw_inv_.get<DFr>();
  const uint32_t log_b = std::min(log_n_, kNttInnerBits);
  const NttPasses outer = ntt_outer_passes(log_b, log_n_);
  auto pass = [&](const NttPass& p, const DFr* t, bool dit) {
    const dim3 grid(1u << (log_n_ - p.group_bits()), count);
    k_pass<DFr><<<grid, kThreads, (size_t(1) << p.group_bits()) * sizeof(DFr), st>>>(v, log_n_, p, t, dit);
    ZK_CUDA_LAUNCHED();
  };
  for (uint32_t i = outer.count; i-- > 0;) pass(outer.pass[i], twi, false);  // widest stages first
  const uint32_t inner_threads = std::max(1u, (1u << log_b) / 2);
  k_inner<DFr><<<dim3(1u << (log_n_ - log_b), count), inner_threads, (size_t(1) << log_b) * sizeof(DFr), st>>>(
      v, log_n_, log_b, tw, twi, lo_.get<DFr>(), hi_.get<DFr>(), h_);
  ZK_CUDA_LAUNCHED();
  for (uint32_t i = 0; i < outer.count; ++i) pass(outer.pass[i], tw, true);
}

template <class C>
void h_scalars(const void* a, const void* b, const void* c, void* out, size_t n, cudaStream_t st) {
  using namespace ntt_kernels;
  using DFr = typename DCurve<C>::Fr;
  if (n == 0) return;
  k_h<DFr><<<uint32_t((n + kThreads - 1) / kThreads), kThreads, 0, st>>>(
      static_cast<const DFr*>(a), static_cast<const DFr*>(b), static_cast<const DFr*>(c), static_cast<DFr*>(out), n);
  ZK_CUDA_LAUNCHED();
}

}  // namespace zkfarm::cuda
