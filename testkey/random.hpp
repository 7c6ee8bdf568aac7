#pragma once
// Random field elements for test keys: from a seeded generator (reproducible
// keys with --seed) or from the OS's CSPRNG.
#include <random>

#include "groth16/bn254.hpp"

namespace zkfarm::testkey {

/// Uniform in [0, r) by rejection over 254-bit draws.
inline U256 random_fr(std::mt19937_64& rng) {
  for (;;) {
    U256 x{rng(), rng(), rng(), rng() & 0x3fffffffffffffffULL};
    if (is_canonical<FrParams>(x)) return x;
  }
}

}  // namespace zkfarm::testkey
