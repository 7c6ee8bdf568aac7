#pragma once
// Per-butterfly steps of the GPU's NTTs over a curve's Fr (DFr: DCurve<C>::Fr) (device_ntt.cu), shared with the
// host emulation in tests/cuda_logic_test.cpp. A transform to the odd coset
// needs no bit-reversal pass: the inverse NTT runs decimation in frequency
// (natural order in, bit-reversed out), the coset shift multiplies position p
// by g^bitrev(p)/n, and the forward NTT runs decimation in time (bit-reversed
// in, natural out). Roots and coset as groth16/ntt.hpp (snarkjs's).
// Twiddles: tw[j] = ω^j (or ω^−j), j < n/2, made on the device from small
// tables (power_from_tables); stage of half-width m reads tw[j·n/(2m)].
#include <cstdint>

#include "gpu_worker/cuda/dfield.cuh"

namespace zkfarm::cuda {

/// Butterfly k (< n/2) of a stage of half-width m (log2 m = log_m): the pair
/// (i, i + m) it combines and its twiddle's index.
ZK_HD void ntt_pair(uint32_t k, uint32_t log_m, uint32_t log_n, uint32_t& i, uint32_t& tw_index) {
  const uint32_t m = 1u << log_m;
  const uint32_t j = k & (m - 1);
  i = ((k >> log_m) << (log_m + 1)) | j;
  tw_index = j << (log_n - 1 - log_m);
}

/// Gentleman–Sande (decimation in frequency): (u, v) → (u + v, (u − v)·w).
template <class DFr>
ZK_HD void butterfly_dif(DFr& u, DFr& v, const DFr& w) {
  DFr t = u - v;
  u = u + v;
  v = t * w;
}

/// Cooley–Tukey (decimation in time): (u, v) → (u + v·w, u − v·w).
template <class DFr>
ZK_HD void butterfly_dit(DFr& u, DFr& v, const DFr& w) {
  DFr t = v * w;
  v = u - t;
  u = u + t;
}

/// The reversal of the low `bits` bits of x.
ZK_HD uint32_t bit_reverse(uint32_t x, uint32_t bits) {
#if defined(__CUDA_ARCH__)
  return bits == 0 ? 0 : __brev(x) >> (32 - bits);
#else
  uint32_t r = 0;
  for (uint32_t b = 0; b < bits; ++b) r |= ((x >> b) & 1u) << (bits - 1 - b);
  return r;
#endif
}

/// x^i·s from two small tables (ntt_tables.hpp, PowerTables): lo[i mod 2^h]·hi[i >> h],
/// lo[j] = x^j, hi[j] = s·x^(j·2^h). Makes the domain's twiddles on the device.
template <class DFr>
ZK_HD DFr power_from_tables(uint32_t i, uint32_t h, const DFr* lo, const DFr* hi) {
  return lo[i & ((1u << h) - 1)] * hi[i >> h];
}

/// The coset factor of bit-reversed position p: g^i/n for i = bitrev(p), from
/// the coset's power tables (hi carries the 1/n).
template <class DFr>
ZK_HD DFr coset_factor(uint32_t p, uint32_t log_n, uint32_t h, const DFr* lo, const DFr* hi) {
  return power_from_tables(bit_reverse(p, log_n), h, lo, hi);
}

/// The H scalar at i: a·b − c (Montgomery) out of Montgomery form.
template <class DFr>
ZK_HD DFr h_scalar(const DFr& a, const DFr& b, const DFr& c) { return (a * b - c).from_montgomery(); }

}  // namespace zkfarm::cuda
