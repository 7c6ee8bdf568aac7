#pragma once
// The odd-coset factors the GPU's NTT reads (ntt_steps.cuh), from a CPU Domain
// (whose twiddles the GPU uploads as they are): g^i/n for i < n split in two
// small tables, in the CPU's Fr (same bytes as the device's DFr).
#include <cstdint>
#include <vector>

#include "groth16/ntt.hpp"

namespace zkfarm::cuda {

struct CosetTables {
  uint32_t h = 0;          // lo has 2^h entries, hi 2^(log_n − h)
  std::vector<Fr> lo;      // g^i, i < 2^h
  std::vector<Fr> hi;      // g^(i·2^h)/n
};

/// About 2·√n·32 bytes for a domain of n points.
inline CosetTables make_coset_tables(const Domain& d) {
  CosetTables t;
  const uint32_t log_n = d.log_size();
  t.h = (log_n + 1) / 2;
  t.lo.resize(size_t(1) << t.h);
  t.hi.resize(size_t(1) << (log_n - t.h));
  Fr x = Fr::one();
  for (auto& v : t.lo) {
    v = x;
    x *= d.coset();
  }
  Fr y = d.n_inv();  // x is now g^(2^h)
  for (auto& v : t.hi) {
    v = y;
    y *= x;
  }
  return t;
}

}  // namespace zkfarm::cuda
