#pragma once
// The host-computed tables the GPU's NTT reads (ntt_steps.cuh): twiddles both
// ways and the odd-coset factors split in two small tables, in the CPU's Fr
// (same bytes as the device's DFr).
#include <cstdint>
#include <vector>

#include "groth16/ntt.hpp"

namespace zkfarm::cuda {

struct NttTables {
  uint32_t log_n = 0;
  uint32_t h = 0;             // coset_lo has 2^h entries, coset_hi 2^(log_n − h)
  std::vector<Fr> tw;         // ω^j, j < n/2 (ω = root_of_unity(log_n))
  std::vector<Fr> tw_inv;     // ω^−j
  std::vector<Fr> coset_lo;   // g^i, i < 2^h (g = odd_coset_generator(log_n))
  std::vector<Fr> coset_hi;   // g^(i·2^h)/n
};

/// Tables for a domain of 2^log_n (1 ≤ log_n ≤ 28): n·32 bytes of twiddles
/// plus about 2·√n·32 bytes of coset factors.
inline NttTables make_ntt_tables(uint32_t log_n, ThreadPool& pool) {
  NttTables t;
  t.log_n = log_n;
  t.h = (log_n + 1) / 2;
  const size_t half = (size_t(1) << log_n) / 2;
  const Fr w = root_of_unity(log_n), wi = w.inv();
  t.tw.resize(half);
  t.tw_inv.resize(half);
  pool.parallel_for(half, [&](size_t b, size_t e) {
    Fr x = w.pow(U256{b, 0, 0, 0}), y = wi.pow(U256{b, 0, 0, 0});
    for (size_t j = b; j < e; ++j) {
      t.tw[j] = x;
      t.tw_inv[j] = y;
      x *= w;
      y *= wi;
    }
  });
  const Fr g = odd_coset_generator(log_n);
  const Fr n_inv = Fr::from_u64(uint64_t(1) << log_n).inv();
  t.coset_lo.resize(size_t(1) << t.h);
  t.coset_hi.resize(size_t(1) << (log_n - t.h));
  Fr x = Fr::one();
  for (auto& v : t.coset_lo) {
    v = x;
    x *= g;
  }
  const Fr step = x;  // g^(2^h)
  Fr y = n_inv;
  for (auto& v : t.coset_hi) {
    v = y;
    y *= step;
  }
  return t;
}

}  // namespace zkfarm::cuda
