#pragma once
// The kernels and launch sequence of the GPU MSM, templated on the curve and
// instantiated by each curve's .cu (bn254.cu, bls12_381.cu); each kernel body
// is a function of msm_steps.cuh, tested on the CPU by tests/gpu_worker/cuda_logic_test.cpp.
#include <cub/device/device_radix_sort.cuh>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

#include "gpu_worker/cuda/device_msm.cuh"
#include "gpu_worker/cuda/msm_finish.hpp"
#include "groth16/stage_clock.hpp"

namespace zkfarm::cuda {

// Helpers and kernels, internal to each curve's .cu (which includes the
// other components' kernels too: hence the named namespace).
namespace {
namespace msm_kernels {

constexpr uint32_t kThreads = 128;       // per block: the point kernels use many registers
// Threads per block of the accumulation kernels, by point field: as many
// warps per SM as the registers allow with little or no spilling (the launch
// bound caps them at 65536 / threads), measured on the H200
// (docs/performance.md, 2026-12-03): G1 of BLS12-381 (12 limbs) 384, its
// 168 registers against 184 at 128 threads (2^24: 168.5 against 174.4 ms
// with the same product); G1 of BN254 (8 limbs) 256 (68.5 against 71.6 ms);
// Fq2 points (G2) spill already at 128. A base field DFp has a limb count N,
// its Fq2 (DFp2) has none.
template <class F>
constexpr uint32_t acc_threads() {
  if constexpr (requires { F::N; }) return F::N >= 12 ? 384 : 256;
  return 128;
}
// How the work of a small MSM is spread (a large one fills the device at any
// split). The first three defaults come from a sweep on an H100
// (docs/performance.md, 2026-12-07), the fourth from H100 runs of session 12;
// ZKFARM_MSM_L1_THREADS, ZKFARM_MSM_REDUCE_THREADS,
// ZKFARM_MSM_NEXT_CHUNK and ZKFARM_MSM_TERM_BLOCKS override them for such
// sweeps, read once per process.
struct MsmTuning {
  uint32_t l1_threads = 1u << 17;     // level-1 accumulation: chunks shrink (32 → 16 → 8) until this many threads
  uint32_t reduce_threads = 1u << 13; // step 4a: segments shrink until this many threads (msm_fit_segments)
  uint32_t next_chunk = 8;            // partial sums per thread at later levels (≥ 4: a level keeps 2 a chunk)
  // Step 4b: terms split into parts until this many blocks (msm_fit_term_parts;
  // 1: one part a term). With a small key's tables (one group) 128 made a
  // 2^15 step 1.06–1.25x and a 2^18 one 1.22–1.55x as fast; a 2^22 step
  // (P = 1 there) is unchanged (docs/performance.md, 2026-12-07 session 12).
  uint32_t term_blocks = 128;
};
// A setting from the environment, 1..2^24 in decimal; anything else keeps
// the default and says so once (a sweep with a mistyped value would
// otherwise measure the default under the setting's name).
uint32_t env_or(const char* name, uint32_t fallback) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  char* end = nullptr;
  const unsigned long x = std::strtoul(v, &end, 10);
  if (*end == 0 && x > 0 && x <= (1ul << 24) && v[0] >= '0' && v[0] <= '9') return uint32_t(x);
  std::fprintf(stderr, "warning: %s=%.32s is not a count from 1 to 16777216; using %u\n", name, v, fallback);
  return fallback;
}
const MsmTuning& msm_tuning() {
  static const MsmTuning t{env_or("ZKFARM_MSM_L1_THREADS", MsmTuning{}.l1_threads),
                           env_or("ZKFARM_MSM_REDUCE_THREADS", MsmTuning{}.reduce_threads),
                           std::max<uint32_t>(4, env_or("ZKFARM_MSM_NEXT_CHUNK", MsmTuning{}.next_chunk)),
                           env_or("ZKFARM_MSM_TERM_BLOCKS", MsmTuning{}.term_blocks)};
  return t;
}
// Sorted pairs per thread at level 1: longer chunks leave fewer partial sums
// (2 per chunk, added later with the dearer XYZZ+XYZZ formula) but fewer
// threads; 32 keeps 2^20-point MSMs at several waves, 128 saves ~6% at 2^24.
// Below 32, for small counts: a chunk's additions are dependent, so 32 of
// them over a few thousand pairs' threads left most SMs idle (a 2^15 witness
// MSM of 73k pairs: 9 blocks for 0.26 ms on an H100).
uint32_t first_chunk(uint32_t count) {
  if (count >= (1u << 25)) return count < (1u << 27) ? 64 : 128;
  uint32_t chunk = 32;
  while (chunk > 8 && count / chunk < msm_tuning().l1_threads) chunk >>= 1;
  return chunk;
}
constexpr size_t kHostTermsBytes = 128 << 10;  // BLS12-381 G2 at c = 20: 195 terms of 384 bytes

// ZKFARM_PROFILE: a phase's device work ends in a stream sync, so the host
// clock measures it.
void lap(StageClock& clock, cudaStream_t st, const char* phase, uint32_t n) {
  if (!clock.on()) return;
  ZK_CUDA(cudaStreamSynchronize(st));
  clock.lap("msm n=" + std::to_string(n) + " " + phase);
}

uint32_t blocks_for(uint64_t threads, uint32_t per_block = kThreads) {
  return uint32_t((threads + per_block - 1) / per_block);
}

// The OR of every scalar's words into or_words[0..8) (zeroed before).
// One thread a scalar and an atomicOr per warp and word: 2^24 / 32 × 8
// atomics on 8 addresses, about 3 ms of a random 2^24 MSM on the H200
// (docs/performance.md). A fixed grid striding over the scalars, ORing in
// registers, would leave one atomic per warp; it waits for a run on the
// device (docs/decisions.md, issue 18).
__global__ void k_or_scalars(const uint32_t* scalars, uint32_t n, uint32_t* or_words) {
  const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  for (int w = 0; w < 8; ++w) {
    uint32_t x = i < n ? scalars[size_t(i) * 8 + w] : 0;
    x = __reduce_or_sync(0xffffffffu, x);  // every lane reaches here: no early return above
    if ((threadIdx.x & 31) == 0 && x) atomicOr(or_words + w, x);
  }
}

__global__ void k_digits(const uint32_t* scalars, MsmShape sh, uint32_t* keys, uint32_t* vals, uint32_t* count) {
  const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  uint32_t nz = i < sh.n ? msm_digits(i, scalars, sh, keys, vals) : 0;
  nz = __reduce_add_sync(0xffffffffu, nz);  // every lane reaches here: no early return above
  if ((threadIdx.x & 31) == 0 && nz) atomicAdd(count, nz);
}

// One thread a point: its copies of a precomputed table.
template <class F>
__global__ void __launch_bounds__(kThreads) k_fold_bases(DAffine<F>* table, uint32_t n, uint32_t c, uint32_t copies) {
  const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) msm_fold_point<F>(i, table, n, c, copies);
}

template <class F>
void fold_bases(void* d_points, uint32_t n, const MsmTableShape& t, cudaStream_t st) {
  if (t.copies < 1 || t.copies > kMsmMaxCopies || uint64_t(t.copies) * n >= (uint64_t(1) << 31) || t.c < 2 ||
      t.c > 24)
    throw std::invalid_argument("MSM table shape out of range");
  if (t.copies == 1 || n == 0) return;
  k_fold_bases<F><<<blocks_for(n), kThreads, 0, st>>>(static_cast<DAffine<F>*>(d_points), n, t.c, t.copies);
  ZK_CUDA_LAUNCHED();
}

template <class F>
__global__ void __launch_bounds__(acc_threads<F>()) k_accumulate_affine(const uint32_t* keys, const uint32_t* vals,
                                                                 uint32_t count, uint32_t chunk, uint32_t chunks,
                                                                 const DAffine<F>* points, DXyzz<F>* buckets,
                                                                 uint32_t* out_keys, DXyzz<F>* out_pts, bool last) {
  const uint32_t t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= chunks) return;
  msm_accumulate_chunk<F>(t, keys, count, chunk, AffineSource<F>{points, vals}, buckets, out_keys, out_pts, last);
}

template <class F>
__global__ void __launch_bounds__(acc_threads<F>()) k_accumulate_xyzz(const uint32_t* keys, const DXyzz<F>* in, uint32_t count,
                                                               uint32_t chunk, uint32_t chunks, DXyzz<F>* buckets, uint32_t* out_keys,
                                                               DXyzz<F>* out_pts, bool last) {
  const uint32_t t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= chunks) return;
  msm_accumulate_chunk<F>(t, keys, count, chunk, XyzzSource<F>{in}, buckets, out_keys, out_pts, last);
}

// The tree's last levels in one launch: once a level's chunks fit one block,
// the block runs that level and every one after it, a barrier between two
// (the writes of one level are visible to the block's threads after
// __syncthreads). The same msm_accumulate_chunk calls in the same order as
// one launch a level, so the same sums; a 2^15 step had ~37 launches of a
// few blocks each in these levels (docs/performance.md, 2026-12-07).
template <class F>
__global__ void __launch_bounds__(acc_threads<F>()) k_accumulate_tail(uint32_t* keys_a, DXyzz<F>* pts_a, uint32_t* keys_b,
                                                               DXyzz<F>* pts_b, uint32_t count, uint32_t chunk,
                                                               DXyzz<F>* buckets) {
  uint32_t* keys[2] = {keys_a, keys_b};
  DXyzz<F>* pts[2] = {pts_a, pts_b};
  for (int cur = 0;; cur = 1 - cur) {
    const uint32_t chunks = (count + chunk - 1) / chunk;
    const bool last = chunks == 1;
    for (uint32_t t = threadIdx.x; t < chunks; t += blockDim.x)
      msm_accumulate_chunk<F>(t, keys[cur], count, chunk, XyzzSource<F>{pts[cur]}, buckets, keys[1 - cur],
                              pts[1 - cur], last);
    if (last) return;
    __syncthreads();
    count = 2 * chunks;
  }
}

template <class F>
__global__ void __launch_bounds__(kThreads) k_reduce_segments(const DXyzz<F>* buckets, MsmShape sh, uint32_t total,
                                                               DXyzz<F>* acc, DXyzz<F>* run) {
  const uint32_t t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t < total) msm_reduce_segment<F>(t, buckets, sh, acc, run);
}

// One block per (window, j, part): part p of T_j as a tree sum in shared memory.
template <class F>
__global__ void __launch_bounds__(kThreads) k_bit_sums(const DXyzz<F>* acc, const DXyzz<F>* run, uint32_t S,
                                                        uint32_t log_s, uint32_t parts, DXyzz<F>* terms) {
  extern __shared__ __align__(16) unsigned char smem[];
  auto* sm = reinterpret_cast<DXyzz<F>*>(smem);
  const MsmTermBlock tb = msm_term_block(blockIdx.x, parts, log_s);
  const uint32_t w = tb.group, j = tb.term;
  uint32_t begin, end;
  msm_term_span(tb.part, parts, S, begin, end);
  DXyzz<F> sum = DXyzz<F>::infinity();
  const DXyzz<F>* src = (j == log_s ? acc : run) + size_t(w) * S;
  for (uint32_t s = begin + threadIdx.x; s < end; s += blockDim.x)
    if (msm_bit_term(j, log_s, s)) sum.add(src[s]);
  sm[threadIdx.x] = sum;
  __syncthreads();
  for (uint32_t half = blockDim.x / 2; half > 0; half >>= 1) {
    if (threadIdx.x < half) {
      DXyzz<F> a = sm[threadIdx.x];
      a.add(sm[threadIdx.x + half]);
      sm[threadIdx.x] = a;
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) terms[blockIdx.x] = sm[0];
}

}  // namespace msm_kernels
}  // namespace

template <class C>
MsmRunner<C>::MsmRunner() {
  using namespace msm_kernels;
  void* p = nullptr;
  ZK_CUDA(cudaMallocHost(&p, 8 * sizeof(uint32_t)));  // the sort's count, or the scalars' OR
  host_words_ = static_cast<uint32_t*>(p);
  try {
    ZK_CUDA(cudaMallocHost(&host_terms_, kHostTermsBytes));
    count_.reserve(sizeof(uint32_t));
    or_words_.reserve(8 * sizeof(uint32_t));
  } catch (...) {
    cudaFreeHost(host_words_);
    if (host_terms_) cudaFreeHost(host_terms_);
    throw;
  }
}

template <class C>
MsmRunner<C>::~MsmRunner() {
  using namespace msm_kernels;
  cudaFreeHost(host_words_);
  cudaFreeHost(host_terms_);
}

template <class C>
uint32_t MsmRunner<C>::top_bits(const uint32_t* d_scalars, uint32_t n, cudaStream_t st) {
  using namespace msm_kernels;
  ZK_CUDA(cudaMemsetAsync(or_words_.get(), 0, 8 * sizeof(uint32_t), st));
  k_or_scalars<<<blocks_for(n), kThreads, 0, st>>>(d_scalars, n, or_words_.get<uint32_t>());
  ZK_CUDA_LAUNCHED();
  ZK_CUDA(cudaMemcpyAsync(host_words_, or_words_.get(), 8 * sizeof(uint32_t), cudaMemcpyDeviceToHost, st));
  ZK_CUDA(cudaStreamSynchronize(st));
  return scalar_top_bits(host_words_);
}

template <class C>
uint32_t MsmRunner<C>::sort_digits(const uint32_t* d_scalars, const MsmShape& sh, cudaStream_t st) {
  using namespace msm_kernels;
  const size_t total = size_t(sh.windows) * sh.n;
  for (int i = 0; i < 2; ++i) {
    keys_[i].reserve(total * 4);
    vals_[i].reserve(total * 4);
  }
  ZK_CUDA(cudaMemsetAsync(count_.get(), 0, sizeof(uint32_t), st));
  k_digits<<<blocks_for(sh.n), kThreads, 0, st>>>(d_scalars, sh, keys_[0].get<uint32_t>(), vals_[0].get<uint32_t>(),
                                                   count_.get<uint32_t>());
  ZK_CUDA_LAUNCHED();
  cub::DoubleBuffer<uint32_t> keys(keys_[0].get<uint32_t>(), keys_[1].get<uint32_t>());
  cub::DoubleBuffer<uint32_t> vals(vals_[0].get<uint32_t>(), vals_[1].get<uint32_t>());
  size_t temp = 0;
  ZK_CUDA(cub::DeviceRadixSort::SortPairs(nullptr, temp, keys, vals, int(total), 0, int(sh.key_bits()), st));
  sort_temp_.reserve(temp);
  ZK_CUDA(cub::DeviceRadixSort::SortPairs(sort_temp_.get(), temp, keys, vals, int(total), 0, int(sh.key_bits()), st));
  sorted_keys_ = keys.Current();
  sorted_vals_ = vals.Current();
  ZK_CUDA(cudaMemcpyAsync(host_words_, count_.get(), sizeof(uint32_t), cudaMemcpyDeviceToHost, st));
  ZK_CUDA(cudaStreamSynchronize(st));
  return *host_words_;
}

template <class C>
template <class P, class F>
Xyzz<P> MsmRunner<C>::sum_points(const MsmShape& sh, uint32_t count, const DAffine<F>* points, cudaStream_t st) {
  using namespace msm_kernels;
  using D = DXyzz<F>;
  StageClock clock;
  buckets_.reserve(size_t(sh.sentinel()) * sizeof(D));
  ZK_CUDA(cudaMemsetAsync(buckets_.get(), 0, size_t(sh.sentinel()) * sizeof(D), st));  // all zero: ZZ = 0, infinity
  if (count > 0) {
    const uint32_t chunk = first_chunk(count);
    uint32_t chunks = (count + chunk - 1) / chunk;
    const uint32_t next_chunk = msm_tuning().next_chunk;
    const uint32_t next = (2 * chunks + next_chunk - 1) / next_chunk;
    part_keys_[0].reserve(size_t(2) * chunks * 4);
    part_pts_[0].reserve(size_t(2) * chunks * sizeof(D));
    part_keys_[1].reserve(size_t(2) * next * 4);
    part_pts_[1].reserve(size_t(2) * next * sizeof(D));
    k_accumulate_affine<F><<<blocks_for(chunks, acc_threads<F>()), acc_threads<F>(), 0, st>>>(
        sorted_keys_, sorted_vals_, count, chunk, chunks, points, buckets_.get<D>(), part_keys_[0].get<uint32_t>(),
        part_pts_[0].get<D>(), chunks == 1);
    ZK_CUDA_LAUNCHED();
    int cur = 0;
    while (chunks > 1) {  // each level leaves 2/next_chunk of the entries
      const uint32_t in_count = 2 * chunks;
      chunks = (in_count + next_chunk - 1) / next_chunk;
      if (chunks <= acc_threads<F>()) {  // this level and the rest: one block
        k_accumulate_tail<F><<<1, acc_threads<F>(), 0, st>>>(part_keys_[cur].get<uint32_t>(), part_pts_[cur].get<D>(),
                                                             part_keys_[1 - cur].get<uint32_t>(),
                                                             part_pts_[1 - cur].get<D>(), in_count, next_chunk,
                                                             buckets_.get<D>());
        ZK_CUDA_LAUNCHED();
        break;
      }
      k_accumulate_xyzz<F><<<blocks_for(chunks, acc_threads<F>()), acc_threads<F>(), 0, st>>>(
          part_keys_[cur].get<uint32_t>(), part_pts_[cur].get<D>(), in_count, next_chunk, chunks, buckets_.get<D>(),
          part_keys_[1 - cur].get<uint32_t>(), part_pts_[1 - cur].get<D>(), chunks == 1);
      ZK_CUDA_LAUNCHED();
      cur = 1 - cur;
    }
  }
  lap(clock, st, "accumulate", sh.n);
  const uint32_t S = sh.segments(), log_s = log2_exact(S), total = sh.groups() * S;
  acc_.reserve(size_t(total) * sizeof(D));
  run_.reserve(size_t(total) * sizeof(D));
  k_reduce_segments<F><<<blocks_for(total), kThreads, 0, st>>>(buckets_.get<D>(), sh, total, acc_.get<D>(), run_.get<D>());
  ZK_CUDA_LAUNCHED();
  const uint32_t n_terms = sh.groups() * (log_s + 1) * sh.parts;
  if (size_t(n_terms) * sizeof(D) > kHostTermsBytes) throw std::logic_error("MSM terms exceed the staging buffer");
  if (sh.parts == 0 || S % sh.parts) throw std::logic_error("MSM term parts do not divide the segments");
  terms_.reserve(size_t(n_terms) * sizeof(D));
  k_bit_sums<F><<<n_terms, kThreads, kThreads * sizeof(D), st>>>(acc_.get<D>(), run_.get<D>(), S, log_s, sh.parts,
                                                                  terms_.get<D>());
  ZK_CUDA_LAUNCHED();
  ZK_CUDA(cudaMemcpyAsync(host_terms_, terms_.get(), size_t(n_terms) * sizeof(D), cudaMemcpyDeviceToHost, st));
  ZK_CUDA(cudaStreamSynchronize(st));
  lap(clock, st, "reduce", sh.n);
  Xyzz<P> r = msm_finish<P>(sh, static_cast<const D*>(host_terms_));
  lap(clock, st, "host finish", sh.n);
  return r;
}

template <class C>
void MsmRunner<C>::run(const uint32_t* d_scalars, uint32_t n, const std::vector<G1Job>& g1, const std::vector<G2Job>& g2,
                    cudaStream_t st, uint32_t c_override, const Table* table) {
  using namespace msm_kernels;
  if (c_override == 1 || c_override > 24) throw std::invalid_argument("MSM window bits must be 2..24");
  if (table && table->shape.copies > 1) {
    if (c_override && c_override != table->shape.c)
      throw std::invalid_argument("MSM window bits differ from the precomputed table's");
    if (table->points < n) throw std::invalid_argument("MSM table holds fewer points than scalars");
    c_override = table->shape.c;
  } else {
    table = nullptr;
  }
  using G1A = typename DCurve<C>::G1A;
  using G2A = typename DCurve<C>::G2A;
  for (auto& j : g1) *j.out = G1::infinity();
  for (auto& j : g2) *j.out = G2::infinity();
  const uint32_t windows_max = msm_shape(n, c_override, C::kFrBits).windows;
  const uint32_t slice = std::max<uint32_t>(1, std::min<uint32_t>(n, (1u << 30) / windows_max));
  for (uint32_t first = 0; first < n; first += slice) {
    const uint32_t len = std::min(slice, n - first);
    StageClock clock;
    const MsmShape full = table ? msm_shape_for_table(len, table->shape, table->points, C::kFrBits)
                                : msm_shape(len, c_override, C::kFrBits);
    // The terms of the widest point type (G2) must fit the host staging buffer.
    const uint32_t max_terms = uint32_t(kHostTermsBytes / sizeof(DXyzz<typename DCurve<C>::Fq2>));
    const MsmShape sh = msm_fit_term_parts(
        msm_fit_segments(msm_trim_windows(full, top_bits(d_scalars + size_t(first) * 8, len, st)),
                         msm_tuning().reduce_threads, max_terms),
        msm_tuning().term_blocks, max_terms, kThreads);
    const uint32_t count = sort_digits(d_scalars + size_t(first) * 8, sh, st);
    lap(clock, st, "top bits+digits+sort", len);
    for (auto& j : g1)
      j.out->add(sum_points<typename C::G1Params>(sh, count, static_cast<const G1A*>(j.points) + first, st));
    for (auto& j : g2)
      j.out->add(sum_points<typename C::G2Params>(sh, count, static_cast<const G2A*>(j.points) + first, st));
  }
}

template <class C>
void MsmRunner<C>::build_g1_table(void* d_points, uint32_t n, const MsmTableShape& t, cudaStream_t st) {
  msm_kernels::fold_bases<typename DCurve<C>::Fq>(d_points, n, t, st);
}

template <class C>
void MsmRunner<C>::build_g2_table(void* d_points, uint32_t n, const MsmTableShape& t, cudaStream_t st) {
  msm_kernels::fold_bases<typename DCurve<C>::Fq2>(d_points, n, t, st);
}

}  // namespace zkfarm::cuda
