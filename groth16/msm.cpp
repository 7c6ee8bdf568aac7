#include "groth16/msm.hpp"

#include <algorithm>
#include <stdexcept>

namespace zkfarm {

namespace {

constexpr unsigned kScalarBits = 254;  // r < 2^254

// c bits of x starting at bit `pos` (c ≤ 16, so at most two limbs).
inline uint32_t bits_at(const U256& x, unsigned pos, unsigned c) {
  if (pos >= 256) return 0;
  unsigned limb = pos / 64, off = pos % 64;
  uint64_t v = x[limb] >> off;
  if (off + c > 64 && limb + 1 < 4) v |= x[limb + 1] << (64 - off);
  return uint32_t(v & ((uint64_t(1) << c) - 1));
}

inline bool is_small(const U256& x, uint64_t v) { return x[0] == v && (x[1] | x[2] | x[3]) == 0; }

}  // namespace

unsigned msm_window_bits(size_t m) {
  unsigned best = 2;
  double best_cost = 1e300;
  for (unsigned c = 2; c <= 16; ++c) {
    double windows = kScalarBits / c + 1;
    double cost = windows * (double(m) + 3.0 * double(size_t(1) << (c - 1)));
    if (cost < best_cost) {
      best_cost = cost;
      best = c;
    }
  }
  return best;
}

ScalarPlan plan_scalars(const U256* scalars, size_t n, ThreadPool& pool, unsigned c) {
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
  if (c == 0) c = msm_window_bits(others);
  if (c < 2 || c > 16) throw std::invalid_argument("MSM window width must be 2..16 bits");
  plan.c = c;
  plan.windows = kScalarBits / c + 1;
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
    std::vector<P> bucket(buckets, P::infinity());
    for (size_t k = b; k < e; ++k) {
      uint32_t i = active[k];
      int d = digits[i];
      if (d == 0) continue;
      A p = A::load(points + i * stride);
      if (d > 0) {
        bucket[d - 1].add_affine(p);
      } else {
        bucket[-d - 1].add_affine(-p);
      }
    }
    // Σ (j+1)·bucket[j] with two running sums.
    P running = P::infinity(), sum = P::infinity();
    for (size_t j = buckets; j-- > 0;) {
      running.add(bucket[j]);
      sum.add(running);
    }
    partial[task] = sum;
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

template Xyzz<G1Params> msm<G1Params>(const uint8_t*, size_t, const ScalarPlan&, size_t, size_t, ThreadPool&);
template Xyzz<G2Params> msm<G2Params>(const uint8_t*, size_t, const ScalarPlan&, size_t, size_t, ThreadPool&);
template Xyzz<G1Params> msm_naive<G1Params>(const uint8_t*, size_t, const U256*, size_t);
template Xyzz<G2Params> msm_naive<G2Params>(const uint8_t*, size_t, const U256*, size_t);

}  // namespace zkfarm
