#include "groth16/ntt.hpp"

#include "groth16/curve_list.hpp"
#include "groth16/roots.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>

namespace zkfarm {

namespace {

// Bit i of x moved to bit 63 − i.
inline uint64_t bit_reverse64(uint64_t x) {
  x = ((x >> 1) & 0x5555555555555555ULL) | ((x & 0x5555555555555555ULL) << 1);
  x = ((x >> 2) & 0x3333333333333333ULL) | ((x & 0x3333333333333333ULL) << 2);
  x = ((x >> 4) & 0x0f0f0f0f0f0f0f0fULL) | ((x & 0x0f0f0f0f0f0f0f0fULL) << 4);
  return __builtin_bswap64(x);
}

template <class Fr>
void powers(Fr* out, size_t n, const Fr& g, ThreadPool& pool) {
  pool.parallel_for(n, [&](size_t b, size_t e) {
    Fr x = g.pow(U256{b, 0, 0, 0});
    for (size_t i = b; i < e; ++i) {
      out[i] = x;
      x *= g;
    }
  });
}

}  // namespace

Fr root_of_unity(uint32_t k) { return root_of_unity_of<Bn254>(k); }

Fr odd_coset_generator(uint32_t k) { return odd_coset_generator_of<Bn254>(k); }

template <class Fr>
void scale_by_powers(Fr* v, size_t n, const Fr& scale, const Fr& g, ThreadPool& pool) {
  pool.parallel_for(n, [&](size_t b, size_t e) {
    Fr x = scale * g.pow(U256{b, 0, 0, 0});
    for (size_t i = b; i < e; ++i) {
      v[i] *= x;
      x *= g;
    }
  });
}

template <class C>
DomainOf<C>::DomainOf(uint32_t log_n, ThreadPool& pool) : log_n_(log_n), n_(size_t(1) << log_n) {
  if (log_n > C::kTwoAdicity) {
    throw std::invalid_argument("domain 2^" + std::to_string(log_n) + " exceeds Fr's 2-adicity " +
                                std::to_string(C::kTwoAdicity));
  }
  if (log_n > kMaxLogDomain) {
    throw std::invalid_argument("domain 2^" + std::to_string(log_n) + " exceeds zkfarm's largest, 2^" +
                                std::to_string(kMaxLogDomain));
  }
  Fr w = root_of_unity_of<C>(log_n);
  tw_.resize(n_ / 2);
  tw_inv_.resize(n_ / 2);
  powers(tw_.data(), n_ / 2, w, pool);
  powers(tw_inv_.data(), n_ / 2, w.inv(), pool);
  n_inv_ = Fr::from_u64(n_).inv();
  coset_ = odd_coset_generator_of<C>(log_n);
}

template <class C>
void DomainOf<C>::transform(Fr* v, const std::vector<Fr>& tw, ThreadPool& pool) const {
  const size_t n = n_;
  if (n == 1) return;
  // Bit-reversal permutation, then log n radix-2 decimation-in-time stages.
  const uint32_t shift = 64 - log_n_;
  pool.parallel_for(n, [&](size_t b, size_t e) {
    for (size_t i = b; i < e; ++i) {
      size_t j = size_t(bit_reverse64(i) >> shift);
      if (i < j) std::swap(v[i], v[j]);
    }
  });
  auto butterflies = [&](size_t base, uint32_t s, size_t k_begin, size_t k_end) {
    const size_t half = size_t(1) << (s - 1);
    const size_t stride = n >> s;  // twiddle index step for this stage
    for (size_t k = k_begin; k < k_end; ++k) {
      const size_t j = k & (half - 1);
      const size_t i = base + (((k >> (s - 1)) << s) | j);
      Fr t = v[i + half] * tw[j * stride];
      Fr u = v[i];
      v[i] = u + t;
      v[i + half] = u - t;
    }
  };
  // The first stages stay inside blocks of 2^10 elements (32 KiB, in L1/L2):
  // one pass over memory for all of them instead of one per stage.
  const uint32_t block_log = std::min<uint32_t>(log_n_, 10);
  const size_t block = size_t(1) << block_log;
  pool.parallel_for(n / block, [&](size_t b, size_t e) {
    for (size_t blk = b; blk < e; ++blk)
      for (uint32_t s = 1; s <= block_log; ++s) butterflies(blk * block, s, 0, block / 2);
  });
  for (uint32_t s = block_log + 1; s <= log_n_; ++s) {
    pool.parallel_for(n / 2, [&](size_t b, size_t e) { butterflies(0, s, b, e); });
  }
}

template <class C>
void DomainOf<C>::ntt(Fr* v, ThreadPool& pool) const { transform(v, tw_, pool); }

template <class C>
void DomainOf<C>::intt(Fr* v, ThreadPool& pool) const {
  transform(v, tw_inv_, pool);
  pool.parallel_for(n_, [&](size_t b, size_t e) {
    for (size_t i = b; i < e; ++i) v[i] *= n_inv_;
  });
}

template <class C>
void DomainOf<C>::to_odd_coset(Fr* v, ThreadPool& pool) const {
  transform(v, tw_inv_, pool);
  scale_by_powers(v, n_, n_inv_, coset_, pool);  // 1/n folded into the coset shift
  transform(v, tw_, pool);
}

// Every curve of Curves gets the domain.
#define ZKFARM_NTT_INSTANTIATE(C) \
  template class DomainOf<C>;     \
  template void scale_by_powers<C::Fr>(C::Fr*, size_t, const C::Fr&, const C::Fr&, ThreadPool&);
ZKFARM_FOR_EACH_CURVE(ZKFARM_NTT_INSTANTIATE)

}  // namespace zkfarm
