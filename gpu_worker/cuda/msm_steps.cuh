#pragma once
// The per-thread steps of the GPU's Pippenger MSM, written once for the
// kernels (device_msm.cu) and for the host emulation that tests them without a
// GPU (tests/cuda_logic_test.cpp). The flow for Σ k_i·P_i over n points:
//  0. top bits: the OR of all scalars; windows above the largest scalar's
//               top bit are dropped (msm_trim_windows).
//  1. digits:   each scalar → W signed c-bit digits d ∈ (−2^(c−1), 2^(c−1)];
//               digit d ≠ 0 of window w becomes the pair
//               (key = w·K + |d| − 1, value = i | sign<<31), K = 2^(c−1)
//               buckets a window; d = 0 becomes the sentinel key W·K.
//  2. sort:     pairs by key (CUB radix sort): each bucket's points adjacent,
//               zero digits at the end, so only the first `count` are read.
//  3. accumulate: chunks of L (32 to 128) sorted pairs per thread, whatever the bucket
//               sizes (a skewed witness, all 1s, costs the same). A run of
//               one key inside a chunk is a bucket's part; the first and last
//               runs of each chunk go to the next level as (key, XYZZ) pairs,
//               the runs between are whole buckets, written at once. The next
//               level is the same step over 2 entries a chunk, until one chunk
//               holds everything.
//  4. reduce:   window sum Σ_b b·B_b. Segments of M buckets per thread give
//               acc_s = Σ_j (j+1)·B_{sM+j} and run_s = Σ_j B_{sM+j}; then
//               sum = Σ_s acc_s + M·Σ_s s·run_s, the last by bits of s:
//               Σ_s s·run_s = Σ_j 2^j·T_j with T_j = Σ_{s: bit j set} run_s.
//               Those log2(S)+1 plain sums per window run as tree reductions;
//               the host finishes (a few hundred additions) on the CPU types.
#include <algorithm>
#include <bit>
#include <cstdint>

#include "gpu_worker/cuda/dcurve.cuh"

namespace zkfarm::cuda {

/// The window layout of one MSM of n scalars below 2^bits (254 for BN254's
/// Fr, 255 for BLS12-381's: the curve's kFrBits).
struct MsmShape {
  uint32_t n = 0;        // scalars and points
  uint32_t c = 0;        // window bits
  uint32_t windows = 0;  // W = ⌈(bits + 1)/c⌉: the top window never carries out
  uint32_t buckets = 0;  // K = 2^(c−1) per window (digit magnitudes 1..K)
  uint32_t seg = 0;      // M: buckets a reduction thread sums (divides K)

  ZK_HD uint32_t sentinel() const { return windows * buckets; }
  ZK_HD uint32_t segments() const { return buckets / seg; }  // S per window, a power of two
  /// Bits of the sort key (the sentinel included).
  uint32_t key_bits() const {
    uint32_t b = 0;
    while ((uint64_t(1) << b) <= sentinel()) ++b;
    return b;
  }
};

/// Window bits for n points of scalars below 2^bits (≤ 255): c ≈ log2(n) − 4,
/// in [6, 20], which minimises ⌈(bits+1)/c⌉·(n + 2^c) additions (accumulation
/// plus reduction) near that value, then lowered to the fewest bits giving the
/// same number of windows. Signed digits need W·c ≥ bits + 1: a top window
/// of at most c − 1 bits plus a carry stays within the K buckets.
inline MsmShape msm_shape(uint32_t n, uint32_t c_override, uint32_t bits) {
  uint32_t lg = 0;
  while ((uint64_t(1) << lg) < n) ++lg;
  uint32_t c = lg > 10 ? lg - 4 : 6;
  if (c > 20) c = 20;
  if (c_override) c = c_override;
  const uint32_t windows = (bits + c) / c;
  // The fewest bits that keep that many windows: half the buckets to reduce
  // whenever it is smaller (BN254 at 2^22: 15 windows of 17 bits rather than of 18).
  if (!c_override) c = (bits + windows) / windows;
  MsmShape s;
  s.n = n;
  s.c = c;
  s.windows = windows;
  s.buckets = 1u << (c - 1);
  s.seg = s.buckets < 32 ? s.buckets : 32;
  return s;
}

/// The bit length of the largest scalar, from the OR of all scalars' words
/// (8 words, little-endian): 0 when every scalar is 0.
inline uint32_t scalar_top_bits(const uint32_t* or_words) {
  for (int w = 7; w >= 0; --w)
    if (or_words[w]) return uint32_t(w) * 32 + uint32_t(std::bit_width(or_words[w]));
  return 0;
}

/// The shape s with only the windows that scalars of top_bits bits can touch
/// (a witness of 0s and 1s needs one, where a full scalar needs W): W·c ≥
/// top_bits + 1 as msm_shape, at least one window, never more than s had. c,
/// the buckets and the segments stay; fewer windows mean fewer pairs to
/// sort and fewer buckets to reduce.
inline MsmShape msm_trim_windows(MsmShape s, uint32_t top_bits) {
  s.windows = std::min(s.windows, (top_bits + s.c) / s.c);  // ≥ 1: top_bits + c ≥ c
  return s;
}

/// The c bits of the 256-bit little-endian scalar s (8 words) from bit `pos`.
ZK_HD uint32_t scalar_bits(const uint32_t* s, uint32_t pos, uint32_t c) {
  const uint32_t wi = pos >> 5, sh = pos & 31;
  if (wi >= 8) return 0;
  uint64_t v = s[wi];
  if (wi + 1 < 8) v |= uint64_t(s[wi + 1]) << 32;
  return uint32_t(v >> sh) & ((1u << c) - 1);
}

/// Step 1 for scalar i (canonical, below 2^bits of msm_shape, 8 words at scalars + 8i): writes
/// window w's pair at w·n + i. Returns how many digits are non-zero.
ZK_HD uint32_t msm_digits(uint32_t i, const uint32_t* scalars, const MsmShape& sh, uint32_t* keys, uint32_t* vals) {
  const uint32_t* s = scalars + size_t(i) * 8;
  const uint32_t full = 1u << sh.c, half = sh.buckets;
  uint32_t carry = 0, nonzero = 0;
  for (uint32_t w = 0; w < sh.windows; ++w) {
    uint32_t d = scalar_bits(s, w * sh.c, sh.c) + carry;
    bool neg = false;
    if (d > half) {
      d = full - d;
      neg = true;
      carry = 1;
    } else {
      carry = 0;
    }
    const size_t at = size_t(w) * sh.n + i;
    if (d == 0) {
      keys[at] = sh.sentinel();
      vals[at] = 0;
    } else {
      keys[at] = w * sh.buckets + d - 1;
      vals[at] = i | (neg ? 0x80000000u : 0u);
      ++nonzero;
    }
  }
  return nonzero;
}

/// Level-1 source: the affine point named by a sorted value, negated when its
/// digit was negative.
/// A source gives entry i (load) and adds it (add); the chunk loop loads one
/// entry ahead, so the gather of the next point overlaps this addition.
template <class F>
struct AffineSource {
  using Item = DAffine<F>;
  const DAffine<F>* points;
  const uint32_t* vals;
  ZK_HD Item load(uint32_t i) const {
    const uint32_t v = vals[i];
    DAffine<F> p = points[v & 0x7fffffffu];
    return (v & 0x80000000u) ? p.neg() : p;
  }
  ZK_HD static void add(DXyzz<F>& acc, const Item& p) { acc.add_affine(p); }
};

/// Later levels: the partial sums the level before wrote.
template <class F>
struct XyzzSource {
  using Item = DXyzz<F>;
  const DXyzz<F>* points;
  ZK_HD Item load(uint32_t i) const { return points[i]; }
  ZK_HD static void add(DXyzz<F>& acc, const Item& p) { acc.add(p); }
};

/// Step 3 for chunk t of `count` sorted entries (keys[0..count) all below the
/// sentinel), L entries a chunk. Whole runs go to buckets[key]; unless
/// `last_level`, the first run goes to out[2t] and the last to out[2t+1] (a
/// chunk of one run writes infinity under the same key at 2t+1, which keeps
/// out sorted by key with no gaps).
template <class F, class Source>
ZK_HD void msm_accumulate_chunk(uint32_t t, const uint32_t* keys, uint32_t count, uint32_t L, const Source& src,
                                DXyzz<F>* buckets, uint32_t* out_keys, DXyzz<F>* out_pts, bool last_level) {
  const uint32_t lo = t * L;
  const uint32_t hi = lo + L < count ? lo + L : count;
  uint32_t run_key = keys[lo];
  DXyzz<F> acc = DXyzz<F>::infinity();
  typename Source::Item next = src.load(lo);
  bool first = true;
  for (uint32_t i = lo + 1; i < hi; ++i) {
    const typename Source::Item cur = next;
    next = src.load(i);
    Source::add(acc, cur);
    const uint32_t k = keys[i];
    if (k != run_key) {
      if (first && !last_level) {
        out_keys[2 * t] = run_key;
        out_pts[2 * t] = acc;
      } else {
        buckets[run_key] = acc;
      }
      first = false;
      run_key = k;
      acc = DXyzz<F>::infinity();
    }
  }
  Source::add(acc, next);
  if (last_level) {
    buckets[run_key] = acc;
  } else if (first) {
    out_keys[2 * t] = run_key;
    out_pts[2 * t] = acc;
    out_keys[2 * t + 1] = run_key;
    out_pts[2 * t + 1] = DXyzz<F>::infinity();
  } else {
    out_keys[2 * t + 1] = run_key;
    out_pts[2 * t + 1] = acc;
  }
}

/// Step 4a for thread t = w·S + s: the running sums of segment s of window w
/// (buckets w·K + s·M … + M − 1, bucket b standing for digit b + 1).
template <class F>
ZK_HD void msm_reduce_segment(uint32_t t, const DXyzz<F>* buckets, const MsmShape& sh, DXyzz<F>* acc_out,
                              DXyzz<F>* run_out) {
  const uint32_t S = sh.segments();
  const uint32_t w = t / S, s = t % S;
  const DXyzz<F>* b = buckets + size_t(w) * sh.buckets + size_t(s) * sh.seg;
  DXyzz<F> run = DXyzz<F>::infinity(), acc = DXyzz<F>::infinity();
  for (int j = int(sh.seg) - 1; j >= 0; --j) {
    run.add(b[j]);
    acc.add(run);
  }
  acc_out[t] = acc;
  run_out[t] = run;
}

/// Step 4b's terms: for window w and j ≤ log2(S), the indices summed into T_j:
/// j < log2(S): run_s for each s with bit j set; j = log2(S): every acc_s.
/// Returns whether position k (< S) of group (w, j) takes part, and from which array.
ZK_HD bool msm_bit_term(uint32_t j, uint32_t log_s, uint32_t s) { return j == log_s || ((s >> j) & 1u); }

}  // namespace zkfarm::cuda
