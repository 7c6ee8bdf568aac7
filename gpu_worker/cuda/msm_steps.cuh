#pragma once
// The per-thread steps of the GPU's Pippenger MSM, written once for the
// kernels (device_msm_impl.cuh) and for the host emulation that tests them without a
// GPU (tests/gpu_worker/cuda_logic_test.cpp). The flow for Σ k_i·P_i over n points:
//  0. top bits: the OR of all scalars; windows above the largest scalar's
//               top bit are dropped (msm_trim_windows).
//  1. digits:   each scalar → W signed c-bit digits d ∈ (−2^(c−1), 2^(c−1)];
//               digit d ≠ 0 of window w becomes the pair
//               (key = w·K + |d| − 1, value = i | sign<<31), K = 2^(c−1)
//               buckets a window; d = 0 becomes the sentinel key W·K.
//               With precomputed bases (m copies, copy t of point i being
//               2^(c·t)·P_i at t·stride + i: msm_fold_point), window w
//               = g·m + t instead uses group g's buckets and copy t's point:
//               (key = g·K + |d| − 1, value = (t·stride + i) | sign<<31), so
//               the W windows become G = ⌈W/m⌉ groups; m = W leaves one,
//               and steps 4 and the host's finish run once instead of W times.
//  2. sort:     pairs by key (CUB radix sort): each bucket's points adjacent,
//               zero digits at the end, so only the first `count` are read.
//  3. accumulate: chunks of L (8 to 128) sorted pairs per thread, whatever the bucket
//               sizes (a skewed witness, all 1s, costs the same). A run of
//               one key inside a chunk is a bucket's part; the first and last
//               runs of each chunk go to the next level as (key, XYZZ) pairs,
//               the runs between are whole buckets, written at once. The next
//               level is the same step over 2 entries a chunk, until one chunk
//               holds everything (the levels that fit one block run in one
//               launch: k_accumulate_tail).
//  4. reduce:   window sum Σ_b b·B_b. Segments of M buckets per thread give
//               acc_s = Σ_j (j+1)·B_{sM+j} and run_s = Σ_j B_{sM+j}; then
//               sum = Σ_s acc_s + M·Σ_s s·run_s, the last by bits of s:
//               Σ_s s·run_s = Σ_j 2^j·T_j with T_j = Σ_{s: bit j set} run_s.
//               Those log2(S)+1 plain sums per window run as tree reductions,
//               each over P slices of the segments (one block a slice, so
//               that a table's single group still fills the device);
//               the host finishes (adds the P parts, then a few hundred
//               additions) on the CPU types, group g weighted by 2^(c·m·g)
//               (msm_finish.hpp).
// Precomputation follows the ZPrize 2023 MSM entries (Yrrid/Snarkify): a
// key's bases never change, so their shifted copies are built once when the
// key becomes resident (device_msm_impl.cuh, k_fold_bases).
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
  uint32_t copies = 1;   // m: precomputed copies of the bases (1: none)
  uint32_t stride = 0;   // points between two copies in the table (copies > 1)
  uint32_t parts = 1;    // P: slices of the S segments each term T_j is summed in (step 4b; divides S)

  /// G = ⌈W/m⌉: bucket sets to reduce (W without precomputation).
  ZK_HD uint32_t groups() const { return (windows + copies - 1) / copies; }
  ZK_HD uint32_t sentinel() const { return groups() * buckets; }
  ZK_HD uint32_t segments() const { return buckets / seg; }  // S per window, a power of two
  /// Bits of the sort key (the sentinel included).
  uint32_t key_bits() const {
    uint32_t b = 0;
    while ((uint64_t(1) << b) <= sentinel()) ++b;
    return b;
  }
};

/// ⌈log2 n⌉ (0 for n ≤ 1).
inline uint32_t ceil_log2(uint32_t n) { return n > 1 ? uint32_t(std::bit_width(n - 1)) : 0; }

/// Window bits for n points of scalars below 2^bits (≤ 255): c ≈ log2(n) − 4,
/// in [6, 20], which minimises ⌈(bits+1)/c⌉·(n + 2^c) additions (accumulation
/// plus reduction) near that value, then lowered to the fewest bits giving the
/// same number of windows. Signed digits need W·c ≥ bits + 1: a top window
/// of at most c − 1 bits plus a carry stays within the K buckets.
inline MsmShape msm_shape(uint32_t n, uint32_t c_override, uint32_t bits) {
  const uint32_t lg = ceil_log2(n);
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

/// The precomputation of one point set of n points: c-bit windows, m copies
/// (copy t of point i is 2^(c·t)·P_i, stored at t·n + i).
struct MsmTableShape {
  uint32_t c = 0;
  uint32_t copies = 1;
};

/// The most copies a table holds: the fold kernel keeps a point's copies'
/// ZZZ coordinates in a per-thread array of this size.
inline constexpr uint32_t kMsmMaxCopies = 16;

/// The table for n points of scalars below 2^bits when at most max_copies
/// copies fit (≥ 1): over c from log2 n − 4 (within [6, 22]) to 22, the least
/// n·W + G·2^(c+1), additions to accumulate plus (about) to reduce G groups
/// of 2^(c−1) buckets, W = ⌈(bits+1)/c⌉ windows and G = ⌈W/m⌉ with m =
/// min(W, max_copies); then the fewest copies giving that G. max_copies = 1
/// gives msm_shape's c and one copy. Also m·n < 2^31 (the sort's 31-bit
/// values). BN254 at 2^22 with room for all copies: c = 20, m = 13.
inline MsmTableShape msm_table_shape(uint32_t n, uint32_t bits, uint32_t max_copies) {
  max_copies = std::min(max_copies, kMsmMaxCopies);
  while (max_copies > 1 && uint64_t(max_copies) * n >= (uint64_t(1) << 31)) --max_copies;
  if (max_copies <= 1) return {msm_shape(n, 0, bits).c, 1};
  const uint32_t lg = ceil_log2(n);
  MsmTableShape best{};
  uint64_t best_cost = ~uint64_t(0);
  for (uint32_t c = std::clamp<uint32_t>(lg > 4 ? lg - 4 : 0, 6, 22); c <= 22; ++c) {
    const uint32_t windows = (bits + c) / c;
    const uint32_t m = std::min(windows, max_copies), groups = (windows + m - 1) / m;
    const uint64_t cost = uint64_t(n) * windows + uint64_t(groups) * (uint64_t(1) << (c + 1));
    if (cost < best_cost) {
      best_cost = cost;
      best = {c, (windows + groups - 1) / groups};
    }
  }
  return best;
}

/// The shape of an MSM over a table: msm_shape at the table's c, reading
/// copies `t.copies` at `stride` points apart (the table's point count).
inline MsmShape msm_shape_for_table(uint32_t n, const MsmTableShape& t, uint32_t stride, uint32_t bits) {
  MsmShape s = msm_shape(n, t.c, bits);
  s.copies = t.copies;
  s.stride = t.copies > 1 ? stride : 0;
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

/// The shape s with its reduction segments fitted to the work (step 4):
/// M = shape.seg, the buckets one thread sums serially, is the largest power
/// of two ≤ min(K, 32) that still leaves at least `min_threads` threads
/// (G·K/M), and at least 1. A small MSM (2^15 points: 24 windows of 1024
/// buckets) then runs 12,288 threads of 2 buckets instead of 768 of 32, whose
/// 64 dependent additions each were a third of the MSM's device time on an
/// H100 (docs/performance.md, 2026-12-07); a large one keeps M = 32. M is
/// then raised, if need be, until the terms the host finishes,
/// G·(log2(K/M) + 1), are at most max_terms. The sum does not depend on M
/// (msm_finish weights by M); only the split of the work does.
inline MsmShape msm_fit_segments(MsmShape s, uint32_t min_threads, uint32_t max_terms) {
  const uint64_t total = uint64_t(s.groups()) * s.buckets;
  uint32_t m = std::min<uint32_t>(s.buckets, 32);
  while (m > 1 && total / m < min_threads) m >>= 1;
  auto terms = [&](uint32_t seg) {
    return uint64_t(s.groups()) * (uint64_t(std::bit_width(s.buckets / seg)) /* log2 S + 1 */);
  };
  while (m < s.buckets && terms(m) > max_terms) m <<= 1;
  s.seg = m;
  return s;
}

/// The shape s with step 4b's terms split into P parts (shape.parts): each
/// T_j summed as P slices of the S segments, one block a slice, so that at
/// least `min_blocks` blocks run where S allows. P is the smallest power of
/// two giving G·(log2 S + 1)·P ≥ min_blocks, but no larger than leaves each
/// slice `min_span` segments (a block's threads' worth) and keeps the host's
/// terms G·(log2 S + 1)·P within max_terms; at least 1. With a precomputed
/// table's one group (2^15 points, c = 16: 14 terms of 8192 segments) one
/// part a term is 14 blocks of 128 threads on a 132-SM device, each thread
/// summing 32 segments before the tree (with such a table the lone step took
/// 8.9 ms against 6.3 without: docs/performance.md, 2026-12-07, session 11);
/// windows without a table (24 groups at 2^15: 240 terms) keep P = 1 at
/// min_blocks ≤ 240.
inline MsmShape msm_fit_term_parts(MsmShape s, uint32_t min_blocks, uint32_t max_terms, uint32_t min_span) {
  const uint64_t terms = uint64_t(s.groups()) * (uint64_t(std::bit_width(s.segments())) /* log2 S + 1 */);
  uint32_t p = 1;
  while (terms * p < min_blocks && s.segments() / (2 * p) >= std::max<uint32_t>(min_span, 1) &&
         terms * 2 * p <= max_terms)
    p <<= 1;
  s.parts = p;
  return s;
}

/// Step 4b's slice of segments for part p of P (S segments, P dividing S as
/// msm_fit_term_parts makes it): [begin, end).
ZK_HD void msm_term_span(uint32_t p, uint32_t parts, uint32_t S, uint32_t& begin, uint32_t& end) {
  const uint32_t span = S / parts;
  begin = p * span;
  end = begin + span;
}

/// Which part of which term block b of step 4b sums: b = (w·(L+1) + j)·P + p
/// for group w, term j ≤ L = log2 S and part p < P, the order msm_finish
/// reads the terms in.
struct MsmTermBlock {
  uint32_t group, term, part;
};
ZK_HD MsmTermBlock msm_term_block(uint32_t b, uint32_t parts, uint32_t log_s) {
  const uint32_t t = b / parts;
  return {t / (log_s + 1), t % (log_s + 1), b % parts};
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
      const uint32_t group = w / sh.copies, copy = w - group * sh.copies;
      keys[at] = group * sh.buckets + d - 1;
      vals[at] = (copy * sh.stride + i) | (neg ? 0x80000000u : 0u);
      ++nonzero;
    }
  }
  return nonzero;
}

/// Builds point i's copies 1..m−1 in `table` (n points a copy, copy 0 the
/// key's own affine points): copy t = 2^(c·t)·P_i by c doublings from copy
/// t − 1 (XYZZ), made affine with one inversion for all m − 1 copies
/// (Montgomery's trick). With Π_t = ZZZ_1·…·ZZZ_(t−1), the forward pass
/// parks (X·ZZ²·Π_t², Y·Π_t) in copy t's slot, since x = X/ZZ = X·ZZ²/ZZZ²
/// (ZZ³ = ZZZ²) and y = Y/ZZZ; the backward pass multiplies by
/// Π_(t+1)⁻¹ (squared for x), then steps Π_(t+1)⁻¹ → Π_t⁻¹ by ZZZ_t. Only
/// the ZZZs stay in a per-thread array. Infinity (0, 0) stays (0, 0) in every
/// copy, and a copy that doubles to infinity (no point of prime order r
/// does; the key's checks refuse others) is (0, 0) without spoiling the
/// others. 1 ≤ m ≤ kMsmMaxCopies.
template <class F>
ZK_HD void msm_fold_point(uint32_t i, DAffine<F>* table, uint32_t n, uint32_t c, uint32_t copies) {
  const DAffine<F> p = table[i];
  if (copies <= 1) return;
  if (p.is_infinity()) {
    for (uint32_t t = 1; t < copies; ++t) table[size_t(t) * n + i] = p;
    return;
  }
  F zzz[kMsmMaxCopies];
  DXyzz<F> q = DXyzz<F>::from_affine(p);
  F prefix = F::one();  // Π_t
  for (uint32_t t = 1; t < copies; ++t) {
    for (uint32_t b = 0; b < c; ++b) q = q.dbl();
    DAffine<F>& slot = table[size_t(t) * n + i];
    if (q.is_infinity()) {
      slot = DAffine<F>{F::zero(), F::zero()};
      zzz[t] = F::one();
      continue;
    }
    slot = DAffine<F>{q.X * q.ZZ.sqr() * prefix.sqr(), q.Y * prefix};
    zzz[t] = q.ZZZ;
    prefix *= q.ZZZ;
  }
  F inv = prefix.inverse();  // Π_m⁻¹
  for (uint32_t t = copies - 1; t >= 1; --t) {
    DAffine<F>& slot = table[size_t(t) * n + i];
    slot = DAffine<F>{slot.x * inv.sqr(), slot.y * inv};
    inv *= zzz[t];
  }
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
  const uint32_t w = t / S, s = t % S;  // w: the group (the window without precomputation)
  const DXyzz<F>* b = buckets + size_t(w) * sh.buckets + size_t(s) * sh.seg;
  DXyzz<F> run = DXyzz<F>::infinity(), acc = DXyzz<F>::infinity();
  for (int j = int(sh.seg) - 1; j >= 0; --j) {
    run.add(b[j]);
    acc.add(run);
  }
  acc_out[t] = acc;
  run_out[t] = run;
}

/// Step 4b's terms: for window w and j ≤ log2(S), the indices summed into T_j
/// (over P parts: msm_term_span):
/// j < log2(S): run_s for each s with bit j set; j = log2(S): every acc_s.
/// Returns whether position k (< S) of group (w, j) takes part, and from which array.
ZK_HD bool msm_bit_term(uint32_t j, uint32_t log_s, uint32_t s) { return j == log_s || ((s >> j) & 1u); }

}  // namespace zkfarm::cuda
