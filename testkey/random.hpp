#pragma once
// Random field elements for test keys: from a seeded generator (reproducible
// keys with --seed) or from the OS's CSPRNG.
#include <random>

#include "groth16/field.hpp"

namespace zkfarm::testkey {

/// Uniform in [0, r) of C's scalar field (4 limbs) by rejection over
/// C::kFrBits-bit draws: 254 bits for BN254 (the draws every earlier seed
/// made), 255 for BLS12-381 (r > 2^254: fewer bits would miss the top of the field).
template <class C>
U256 random_fr(std::mt19937_64& rng) {
  using Fr = typename C::Fr;
  static_assert(Fr::N == 4 && C::kFrBits > 192 && C::kFrBits <= 256);
  constexpr uint64_t kTopMask = C::kFrBits == 256 ? ~0ULL : (1ULL << (C::kFrBits - 192)) - 1;
  const U256 r = Fr::modulus();
  for (;;) {
    U256 x{rng(), rng(), rng(), rng() & kTopMask};
    for (int i = 3; i >= 0; --i)
      if (x[size_t(i)] != r[size_t(i)]) {
        if (x[size_t(i)] < r[size_t(i)]) return x;
        break;
      }
  }
}

}  // namespace zkfarm::testkey
