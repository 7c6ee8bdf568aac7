#include "groth16/msm.hpp"

#include <algorithm>
#include <stdexcept>

namespace zkfarm {

namespace {

// c bits of x starting at bit `pos` (c ≤ kMaxWindowBits, so at most two limbs).
inline uint32_t bits_at(const U256& x, unsigned pos, unsigned c) {
  if (pos >= 256) return 0;
  unsigned limb = pos / 64, off = pos % 64;
  uint64_t v = x[limb] >> off;
  if (off + c > 64 && limb + 1 < 4) v |= x[limb + 1] << (64 - off);
  return uint32_t(v & ((uint64_t(1) << c) - 1));
}

inline bool is_small(const U256& x, uint64_t v) { return x[0] == v && (x[1] | x[2] | x[3]) == 0; }

// Windows with fewer buckets than this accumulate in XYZZ: a batch would hold
// too few additions to pay for its inversion.
constexpr size_t kBatchAffineMinBuckets = 256;

// Σ (j+1)·bucket[j], from the top with two running sums. `extra` (may be null)
// holds XYZZ parts of the buckets that the affine accumulation passed over.
template <class C>
Xyzz<C> reduce_buckets(const Affine<C>* affine, const uint8_t* set, const Xyzz<C>* extra, size_t buckets) {
  Xyzz<C> running = Xyzz<C>::infinity(), sum = Xyzz<C>::infinity();
  for (size_t j = buckets; j-- > 0;) {
    if (set[j]) running.add_affine(affine[j]);
    if (extra) running.add(extra[j]);
    sum.add(running);
  }
  return sum;
}

// One window over `count` active points: bucket[|d|−1] ± P in XYZZ (8M+2S each).
template <class C>
Xyzz<C> window_sum_xyzz(const uint8_t* points, size_t stride, const int16_t* digits, const uint32_t* idx,
                        size_t count, size_t buckets) {
  std::vector<Xyzz<C>> bucket(buckets, Xyzz<C>::infinity());
  for (size_t k = 0; k < count; ++k) {
    const uint32_t i = idx[k];
    const int d = digits[i];
    if (d == 0) continue;
    Affine<C> p = Affine<C>::load(points + i * stride);
    if (d > 0) {
      bucket[d - 1].add_affine(p);
    } else {
      bucket[-d - 1].add_affine(-p);
    }
  }
  Xyzz<C> running = Xyzz<C>::infinity(), sum = Xyzz<C>::infinity();
  for (size_t j = buckets; j-- > 0;) {
    running.add(bucket[j]);
    sum.add(running);
  }
  return sum;
}

// One window with affine buckets, added in batches that share one inversion
// (Montgomery's trick): λ = (y2−y1)/(x2−x1), about 6M per addition against 10
// for XYZZ. A batch holds at most one addition per bucket; a point whose bucket
// is already in the batch, or whose x equals the bucket's (doubling or
// cancellation), goes to an XYZZ side bucket instead, so no point waits.
template <class C>
Xyzz<C> window_sum_batch_affine(const uint8_t* points, size_t stride, const int16_t* digits, const uint32_t* idx,
                                size_t count, size_t buckets) {
  using F = typename C::Field;
  using A = Affine<C>;
  const size_t batch_max = std::min<size_t>(buckets / 8, 1024);
  std::vector<A> bucket(buckets);
  std::vector<uint8_t> set(buckets, 0), queued(buckets, 0);
  std::vector<Xyzz<C>> extra;  // allocated on first use
  std::vector<uint32_t> batch_bucket(batch_max);
  std::vector<A> batch_point(batch_max);
  std::vector<F> diff(batch_max), scratch(batch_max);
  size_t fill = 0;

  auto side_add = [&](size_t j, const A& p) {
    if (extra.empty()) extra.assign(buckets, Xyzz<C>::infinity());
    extra[j].add_affine(p);
  };
  auto flush = [&] {
    for (size_t t = 0; t < fill; ++t) diff[t] = batch_point[t].x - bucket[batch_bucket[t]].x;
    batch_inverse(diff.data(), fill, scratch.data());
    for (size_t t = 0; t < fill; ++t) {
      A& q = bucket[batch_bucket[t]];
      const A& p = batch_point[t];
      F lambda = (p.y - q.y) * diff[t];
      F x3 = lambda.sqr() - q.x - p.x;
      q.y = lambda * (q.x - x3) - q.y;
      q.x = x3;
      queued[batch_bucket[t]] = 0;
    }
    fill = 0;
  };

  for (size_t k = 0; k < count; ++k) {
    const uint32_t i = idx[k];
    const int d = digits[i];
    if (d == 0) continue;
    A p = A::load(points + i * stride);
    size_t j;
    if (d > 0) {
      j = size_t(d - 1);
    } else {
      j = size_t(-d - 1);
      p = -p;
    }
    if (!set[j]) {
      bucket[j] = p;
      set[j] = 1;
    } else if (queued[j] || bucket[j].x == p.x) {
      side_add(j, p);
    } else {
      queued[j] = 1;
      batch_bucket[fill] = uint32_t(j);
      batch_point[fill] = p;
      if (++fill == batch_max) flush();
    }
  }
  flush();
  return reduce_buckets<C>(bucket.data(), set.data(), extra.empty() ? nullptr : extra.data(), buckets);
}

}  // namespace

unsigned msm_window_bits(size_t m, unsigned scalar_bits) {
  unsigned best = 2;
  double best_cost = 1e300;
  for (unsigned c = 2; c <= kMaxWindowBits; ++c) {
    double windows = scalar_bits / c + 1;
    double cost = windows * (double(m) + 3.0 * double(size_t(1) << (c - 1)));
    if (cost < best_cost) {
      best_cost = cost;
      best = c;
    }
  }
  return best;
}

ScalarPlan plan_scalars(const U256* scalars, size_t n, ThreadPool& pool, unsigned c, unsigned scalar_bits) {
  if (scalar_bits < 1 || scalar_bits > 255) throw std::invalid_argument("MSM scalars must have 1..255 bits");
  ScalarPlan plan;
  plan.n = n;
  plan.kind.resize(n);
  size_t others = 0;
  for (size_t i = 0; i < n; ++i) {
    const U256& k = scalars[i];
    uint8_t kind = is_small(k, 0) ? ScalarPlan::kZero : is_small(k, 1) ? ScalarPlan::kOne : ScalarPlan::kOther;
    plan.kind[i] = kind;
    others += kind == ScalarPlan::kOther;
  }
  plan.others = others;
  if (c == 0) c = msm_window_bits(others, scalar_bits);
  if (c < 2 || c > kMaxWindowBits) throw std::invalid_argument("MSM window width must be 2..15 bits");
  plan.c = c;
  plan.windows = scalar_bits / c + 1;
  plan.digits.assign(size_t(plan.windows) * n, 0);
  const int32_t half = 1 << (c - 1), full = 1 << c;
  pool.parallel_for(n, [&](size_t b, size_t e) {
    for (size_t i = b; i < e; ++i) {
      if (plan.kind[i] != ScalarPlan::kOther) continue;
      int32_t carry = 0;
      for (unsigned w = 0; w < plan.windows; ++w) {
        int32_t d = int32_t(bits_at(scalars[i], w * c, c)) + carry;
        carry = d > half;
        if (carry) d -= full;
        plan.digits[size_t(w) * n + i] = int16_t(d);
      }
    }
  });
  return plan;
}

template <class C>
Xyzz<C> msm(const uint8_t* points, size_t stride, const ScalarPlan& plan, size_t first, size_t count,
            ThreadPool& pool) {
  using P = Xyzz<C>;
  using A = Affine<C>;
  if (first > plan.n || count > plan.n - first) throw std::out_of_range("msm: range past the scalar plan");

  // Indices (relative to `points`) worth visiting: scalar not 0/1, point finite.
  std::vector<uint32_t> active;
  active.reserve(std::min(count, plan.others));
  P ones = P::infinity();
  {
    const unsigned chunks = std::max(1u, pool.size());
    std::vector<std::vector<uint32_t>> act(chunks);
    std::vector<P> one_sums(chunks, P::infinity());
    const size_t step = (count + chunks - 1) / chunks;
    pool.run(chunks, [&](size_t t) {
      size_t b = t * step, e = std::min(count, b + step);
      for (size_t i = b; i < e; ++i) {
        uint8_t kind = plan.kind[first + i];
        if (kind == ScalarPlan::kZero) continue;
        A p = A::load(points + i * stride);
        if (p.is_infinity()) continue;
        if (kind == ScalarPlan::kOne) {
          one_sums[t].add_affine(p);
        } else {
          act[t].push_back(uint32_t(i));
        }
      }
    });
    for (unsigned t = 0; t < chunks; ++t) {
      ones.add(one_sums[t]);
      active.insert(active.end(), act[t].begin(), act[t].end());
    }
  }
  if (active.empty()) return ones;

  // Tasks: every window, split into enough point chunks to keep all threads busy.
  const unsigned c = plan.c, windows = plan.windows;
  const size_t buckets = size_t(1) << (c - 1);
  size_t chunks = std::max<size_t>(1, (size_t(pool.size()) * 2 + windows - 1) / windows);
  chunks = std::min(chunks, std::max<size_t>(1, active.size() / 1024));
  const size_t step = (active.size() + chunks - 1) / chunks;
  std::vector<P> partial(size_t(windows) * chunks, P::infinity());
  pool.run(size_t(windows) * chunks, [&](size_t task) {
    const unsigned w = unsigned(task / chunks);
    const size_t chunk = task % chunks;
    const size_t b = chunk * step, e = std::min(active.size(), b + step);
    const int16_t* digits = plan.digits.data() + size_t(w) * plan.n + first;
    partial[task] = buckets >= kBatchAffineMinBuckets
                        ? window_sum_batch_affine<C>(points, stride, digits, active.data() + b, e - b, buckets)
                        : window_sum_xyzz<C>(points, stride, digits, active.data() + b, e - b, buckets);
  });

  // Horner over windows, most significant first.
  P result = P::infinity();
  for (unsigned w = windows; w-- > 0;) {
    for (unsigned i = 0; i < c; ++i) result = result.dbl();
    for (size_t chunk = 0; chunk < chunks; ++chunk) result.add(partial[size_t(w) * chunks + chunk]);
  }
  result.add(ones);
  return result;
}

template <class C>
Xyzz<C> msm_naive(const uint8_t* points, size_t stride, const U256* scalars, size_t count) {
  Xyzz<C> sum = Xyzz<C>::infinity();
  for (size_t i = 0; i < count; ++i) {
    sum.add(Xyzz<C>::from_affine(Affine<C>::load(points + i * stride)).mul(scalars[i]));
  }
  return sum;
}

// Both groups of every curve of Curves.
#define ZKFARM_MSM_INSTANTIATE(C)                                                                              \
  template Xyzz<C::G1Params> msm<C::G1Params>(const uint8_t*, size_t, const ScalarPlan&, size_t, size_t, ThreadPool&); \
  template Xyzz<C::G2Params> msm<C::G2Params>(const uint8_t*, size_t, const ScalarPlan&, size_t, size_t, ThreadPool&); \
  template Xyzz<C::G1Params> msm_naive<C::G1Params>(const uint8_t*, size_t, const U256*, size_t);              \
  template Xyzz<C::G2Params> msm_naive<C::G2Params>(const uint8_t*, size_t, const U256*, size_t);
ZKFARM_FOR_EACH_CURVE(ZKFARM_MSM_INSTANTIATE)

}  // namespace zkfarm
