#pragma once
// Random inputs for tests and benchmarks (no fixture paths needed, so
// bench/ can use it too): canonical scalars, and many distinct curve points
// fast, P_i = (start + i)·G by consecutive additions, then to affine with one
// inversion per block (Montgomery's trick), in zkey layout.
#include <algorithm>
#include <bit>
#include <random>
#include <vector>

#include "groth16/bls12_381.hpp"
#include "groth16/bn254.hpp"
#include "groth16/thread_pool.hpp"

namespace zkfarm::test {

/// Uniform-ish canonical scalar < r (top bits masked, then rejection).
inline U256 random_scalar(std::mt19937_64& rng) {
  for (;;) {
    U256 x{rng(), rng(), rng(), rng() & 0x3fffffffffffffffULL};
    if (is_canonical<FrParams>(x)) return x;
  }
}

/// A canonical scalar < r of curve C (C: curve traits), every bit below
/// C::kFrBits random (then rejection): BLS12-381's reach bit 254.
template <class C>
U256 random_scalar_of(std::mt19937_64& rng) {
  static_assert(C::kFrBits > 192 && C::kFrBits < 256);
  const uint64_t top = (uint64_t(1) << (C::kFrBits - 192)) - 1;
  for (;;) {
    U256 x{rng(), rng(), rng(), rng() & top};
    if (is_canonical<typename C::Fr::Params>(x)) return x;
  }
}

/// A uniform element of any field F (a groth16::Fp, any limb count): random
/// limbs below p's bit length, then rejection. Montgomery form.
template <class F>
F random_element(std::mt19937_64& rng) {
  const uint64_t mask = (uint64_t(1) << std::bit_width(F::Params::kModulus[F::N - 1])) - 1;
  for (;;) {
    typename F::Int x{};
    for (auto& l : x) l = rng();
    x[F::N - 1] &= mask;
    if (is_canonical<typename F::Params>(x)) return F::from_int(x);
  }
}

/// n points (start + i)·gen, i < n, as n·sizeof(Affine<C>) bytes.
template <class C>
std::vector<uint8_t> consecutive_points(const Affine<C>& gen, uint64_t start, size_t n, ThreadPool& pool) {
  using F = typename C::Field;
  constexpr size_t stride = sizeof(Affine<C>);
  std::vector<uint8_t> out(n * stride);
  pool.parallel_for(n, [&](size_t b, size_t e) {
    constexpr size_t kBlock = 1024;
    std::vector<Xyzz<C>> pts;
    std::vector<F> prefix;
    Xyzz<C> p = Xyzz<C>::from_affine(gen).mul(U256{start + b, 0, 0, 0});
    for (size_t lo = b; lo < e; lo += kBlock) {
      const size_t m = std::min(kBlock, e - lo);
      pts.resize(m);
      prefix.resize(m);
      F acc = F::one();
      for (size_t i = 0; i < m; ++i) {
        pts[i] = p;
        acc *= p.ZZZ;  // ZZZ ≠ 0: no multiple of G below its order is infinity
        prefix[i] = acc;
        p.add_affine(gen);
      }
      F inv = acc.inv();
      for (size_t i = m; i-- > 0;) {
        F izzz = i ? inv * prefix[i - 1] : inv;  // 1/ZZZ_i
        inv *= pts[i].ZZZ;
        F izz = (izzz * pts[i].ZZ).sqr();
        Affine<C>{pts[i].X * izz, pts[i].Y * izzz}.store(&out[(lo + i) * stride]);
      }
    }
  });
  return out;
}

}  // namespace zkfarm::test
