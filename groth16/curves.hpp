#pragma once
// The curves zkfarm proves, as the file formats see them: each one's id and
// the primes a zkey's header (n8q, q, n8r, r) or a witness's header (n8,
// prime) must hold. The primes are the curve files' own constants
// (bn254.hpp, bls12_381.hpp), not copies: one row per curve of curve_list.hpp's
// Curves, made from them.
#include <cstdint>
#include <span>

#include "groth16/curve_id.hpp"

namespace zkfarm {

/// A curve's primes as little-endian 64-bit limbs.
struct CurvePrimes {
  CurveId id;
  uint32_t n8q;       ///< bytes of Fq (32 or 48); q has n8q / 8 limbs
  const uint64_t* q;  ///< the base field's prime
  const uint64_t* r;  ///< the scalar field's prime (the group order), 4 limbs: n8r = 32 for every curve here
};

/// Every curve zkfarm knows, BN254 first.
std::span<const CurvePrimes> known_curves();
/// The row of `id`. Throws UnknownCurve (curve_list.hpp) for an id of no curve.
const CurvePrimes& curve_primes(CurveId id);

/// p (limbs·8 bytes, little-endian, any alignment) < m (limbs limbs).
bool le_limbs_less(const uint8_t* p, const uint64_t* m, size_t limbs);
/// p (a multiple of 8 bytes, little-endian) == m (p.size()/8 limbs).
bool le_limbs_equal(std::span<const uint8_t> p, const uint64_t* m);

}  // namespace zkfarm
