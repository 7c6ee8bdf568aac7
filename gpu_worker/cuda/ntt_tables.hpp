#pragma once
// The small tables from which the GPU makes its domain's tables (ntt_steps.cuh,
// power_from_tables): x^i·s for i < 2^k as lo[i mod 2^h]·hi[i >> h], so a
// domain of n points costs the host about 3·√n multiplications and the bus
// a few KiB, and the device expands the n twiddles itself. Values in the
// CPU's Fr of the curve (same bytes as the device's DCurve<C>::Fr). Field arithmetic is exact and
// Montgomery form canonical: the products are the CPU Domain's values, byte
// for byte, however they are computed.
#include <cstdint>
#include <vector>

#include "groth16/roots.hpp"

namespace zkfarm::cuda {

/// x^i·scale for i < 2^log_count = lo[i mod 2^h]·hi[i >> h], over a curve's Fr.
template <class Fr>
struct PowerTables {
  uint32_t h = 0;      // lo has 2^h entries, hi 2^(log_count − h)
  std::vector<Fr> lo;  // x^i, i < 2^h
  std::vector<Fr> hi;  // scale·x^(i·2^h)
};

/// About 2·√(2^log_count)·32 bytes.
template <class Fr>
PowerTables<Fr> power_tables(const Fr& x, uint32_t log_count, const Fr& scale) {
  PowerTables<Fr> t;
  t.h = (log_count + 1) / 2;
  t.lo.resize(size_t(1) << t.h);
  t.hi.resize(size_t(1) << (log_count - t.h));
  Fr p = Fr::one();
  for (auto& v : t.lo) {
    v = p;
    p *= x;
  }
  Fr q = scale;  // p is now x^(2^h)
  for (auto& v : t.hi) {
    v = q;
    q *= p;
  }
  return t;
}

/// The tables of a domain of 2^log_n points of curve C's Fr (1 ≤ log_n ≤
/// C::kTwoAdicity), as the CPU's DomainOf<C>(log_n) defines them: twiddles
/// ω^j and ω^−j for j < n/2, and the odd coset's factors g^i/n for i < n
/// (g = odd_coset_generator_of<C>(log_n)).
template <class C>
struct DomainTables {
  PowerTables<typename C::Fr> tw, tw_inv, coset;
};

/// Throws std::invalid_argument when log_n > C::kTwoAdicity (as root_of_unity_of does).
template <class C>
DomainTables<C> domain_tables(uint32_t log_n) {
  using Fr = typename C::Fr;
  const Fr w = root_of_unity_of<C>(log_n);
  const Fr n_inv = Fr::from_u64(uint64_t(1) << log_n).inv();
  return {power_tables(w, log_n - 1, Fr::one()), power_tables(w.inv(), log_n - 1, Fr::one()),
          power_tables(odd_coset_generator_of<C>(log_n), log_n, n_inv)};
}

}  // namespace zkfarm::cuda
