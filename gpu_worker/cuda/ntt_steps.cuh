#pragma once
// Per-butterfly steps of the GPU's NTTs over a curve's Fr (DFr: DCurve<C>::Fr) (device_ntt.cu), shared with the
// host emulation in tests/gpu_worker/cuda_logic_test.cpp. A transform to the odd coset
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

/// Stages of the inner block: the 10 innermost of both transforms and the
/// coset shift run in one pass over blocks of 2^10 elements (32 KiB of
/// shared memory).
constexpr uint32_t kNttInnerBits = 10;
/// The outer stages (half-widths ≥ 2^kNttInnerBits) run in passes of up to
/// kNttPassStages stages each, on groups of 2^(s + kNttRunBits) elements in
/// shared memory: runs of 2^kNttRunBits consecutive elements (512 bytes, so
/// loads stay coalesced) at the 2^s positions the s stages combine. One pass
/// reads and writes the array once where a radix-2 stage per pass read and
/// wrote it s times.
constexpr uint32_t kNttRunBits = 4;
constexpr uint32_t kNttPassStages = 6;

/// One pass over the outer stages: half-widths 2^lm_lo … 2^(lm_lo + s − 1),
/// lm_lo ≥ kNttRunBits.
struct NttPass {
  uint32_t lm_lo = 0;
  uint32_t s = 0;
  ZK_HD uint32_t group_bits() const { return s + kNttRunBits; }
};

/// The passes for the outer stages [lo, hi) (as many as needed for at most
/// kNttPassStages each, their sizes differing by at most one), lowest first.
/// At most 4 (hi ≤ 28 = kMaxLogDomain, lo = kNttInnerBits); count says how many.
struct NttPasses {
  NttPass pass[4];
  uint32_t count = 0;
};
inline NttPasses ntt_outer_passes(uint32_t lo, uint32_t hi) {
  NttPasses r;
  if (hi <= lo) return r;
  const uint32_t stages = hi - lo;
  r.count = (stages + kNttPassStages - 1) / kNttPassStages;
  uint32_t at = lo;
  for (uint32_t p = 0; p < r.count; ++p) {
    const uint32_t s = stages / r.count + (p < stages % r.count ? 1 : 0);
    r.pass[p] = NttPass{at, s};
    at += s;
  }
  return r;
}

/// The array index of element x (< 2^group_bits) of group g (< 2^(log_n −
/// group_bits)) of pass p: x's low kNttRunBits bits are the index's low bits,
/// x's next s bits are bits lm_lo … lm_lo + s − 1, and g fills the rest
/// (bits kNttRunBits … lm_lo − 1, then lm_lo + s upward).
ZK_HD uint32_t ntt_group_index(uint32_t g, uint32_t x, const NttPass& p) {
  const uint32_t q = kNttRunBits, gap = p.lm_lo - q;
  const uint32_t run = x & ((1u << q) - 1), t = x >> q;
  const uint32_t mid = g & ((1u << gap) - 1), high = g >> gap;
  return run | (mid << q) | (t << p.lm_lo) | (high << (p.lm_lo + p.s));
}

/// Butterfly k (< 2^(group_bits − 1)) of the pass's stage r (< s; half-width
/// 2^(lm_lo + r)) in group g: the pair (x, x + 2^(kNttRunBits + r)) of the
/// group's elements it combines, and its twiddle's index (ntt_pair's, from
/// the array index of x).
ZK_HD void ntt_group_pair(uint32_t g, uint32_t k, uint32_t r, const NttPass& p, uint32_t log_n, uint32_t& x,
                          uint32_t& tw_index) {
  const uint32_t b = kNttRunBits + r, lm = p.lm_lo + r;
  x = ((k >> b) << (b + 1)) | (k & ((1u << b) - 1));
  tw_index = (ntt_group_index(g, x, p) & ((1u << lm) - 1)) << (log_n - 1 - lm);
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
