#pragma once
// Fixed-base scalar multiplication k·G for many k and one G, as a key setup
// needs: a table of d·2^(8w)·G for the 32 byte-windows w and digits d = 1..255,
// so k·G is at most 32 mixed additions. Results are converted to affine in
// batches that share one inversion. C: a group's params (G1Params or
// G2Params of either curve); scalars below 2^256 (both curves' Fr).
#include <algorithm>
#include <vector>

#include "groth16/field.hpp"  // before curve.hpp, which uses its types
#include "groth16/curve.hpp"
#include "groth16/thread_pool.hpp"

namespace zkfarm::testkey {

template <class C>
class FixedBase {
 public:
  explicit FixedBase(const Affine<C>& g) : table_(32 * 255) {
    std::vector<Xyzz<C>> proj(32 * 255);
    Xyzz<C> base = Xyzz<C>::from_affine(g);
    for (int w = 0; w < 32; ++w) {
      Xyzz<C> acc = base;
      for (int d = 0; d < 255; ++d) {
        proj[w * 255 + d] = acc;
        acc.add(base);
      }
      for (int i = 0; i < 8; ++i) base = base.dbl();
    }
    to_affine(proj.data(), table_.data(), proj.size());
  }

  /// k·G for a canonical k (< 2^256).
  Xyzz<C> mul(const U256& k) const {
    Xyzz<C> acc = Xyzz<C>::infinity();
    for (int w = 0; w < 32; ++w) {
      unsigned d = unsigned(k[w / 8] >> (8 * (w % 8))) & 0xff;
      if (d) acc.add_affine(table_[w * 255 + d - 1]);
    }
    return acc;
  }

  /// out[i] = scalars[i]·G as affine bytes (sizeof(Affine<C>) each, a zkey's
  /// layout), for i < n, on the pool; a zero scalar gives the point at infinity.
  /// Fr: a 4-limb scalar field element (Montgomery form).
  template <class Fr>
  void mul_many(const Fr* scalars, size_t n, uint8_t* out, ThreadPool& pool) const {
    constexpr size_t kBatch = 1024;
    pool.run((n + kBatch - 1) / kBatch, [&](size_t chunk) {
      const size_t b = chunk * kBatch, e = std::min(n, b + kBatch);
      std::vector<Xyzz<C>> proj(e - b);
      std::vector<Affine<C>> aff(e - b);
      for (size_t i = b; i < e; ++i) proj[i - b] = mul(scalars[i].to_u256());
      to_affine(proj.data(), aff.data(), e - b);
      for (size_t i = b; i < e; ++i) aff[i - b].store(out + i * sizeof(Affine<C>));
    });
  }

  /// Affine forms of n points with one inversion (infinity stays (0, 0)).
  static void to_affine(const Xyzz<C>* in, Affine<C>* out, size_t n) {
    using F = typename C::Field;
    std::vector<F> inv(n), scratch(n);
    for (size_t i = 0; i < n; ++i) inv[i] = in[i].ZZZ;
    batch_inverse(inv.data(), n, scratch.data());
    for (size_t i = 0; i < n; ++i) {
      if (in[i].is_infinity()) {
        out[i] = Affine<C>::infinity();
        continue;
      }
      F izz = (inv[i] * in[i].ZZ).sqr();  // ZZ³ = ZZZ², so (ZZ/ZZZ)² = 1/ZZ
      out[i] = {in[i].X * izz, in[i].Y * inv[i]};
    }
  }

 private:
  std::vector<Affine<C>> table_;
};

}  // namespace zkfarm::testkey
