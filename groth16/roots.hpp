#pragma once
// Roots of unity of a curve's scalar field as snarkjs (ffjavascript's
// F1Field) picks them: r − 1 = 2^s·t with t odd, nqr the smallest quadratic
// non-residue from 2, w[s] = nqr^t, w[k] = w[k+1]² (so w[k] has order 2^k and
// w[0] = 1); the odd coset of a domain of 2^k points is shifted by w[k+1], or
// for k = s by Fr.shift = nqr² (ffjavascript 0.3.1 src/f1field.js:55;
// snarkjs groth16_prove.js:64). C: curve traits (kTwoAdicity = s, kNqr).
#include <cstdint>
#include <stdexcept>
#include <string>

namespace zkfarm {

/// snarkjs's w[k], a primitive 2^k-th root of unity, Montgomery form.
/// Throws std::invalid_argument when k > C::kTwoAdicity.
template <class C>
typename C::Fr root_of_unity_of(uint32_t k) {
  using Fr = typename C::Fr;
  if (k > C::kTwoAdicity) throw std::invalid_argument("no root of unity of order 2^" + std::to_string(k));
  // t = (r − 1) >> s: r − 1 has exactly s trailing zero bits.
  auto t = Fr::modulus();
  t[0] -= 1;
  for (uint32_t shifted = 0; shifted < C::kTwoAdicity; ++shifted) {
    for (size_t i = 0; i < t.size(); ++i) t[i] = (t[i] >> 1) | (i + 1 < t.size() ? t[i + 1] << 63 : 0);
  }
  Fr w = Fr::from_u64(C::kNqr).pow(t);
  for (uint32_t i = C::kTwoAdicity; i > k; --i) w = w.sqr();
  return w;
}

/// The shift of the odd coset snarkjs evaluates on for a domain of 2^k points
/// (k ≤ kTwoAdicity): w[k+1], or nqr² for the largest domain.
template <class C>
typename C::Fr odd_coset_generator_of(uint32_t k) {
  using Fr = typename C::Fr;
  if (k == C::kTwoAdicity) return Fr::from_u64(C::kNqr * C::kNqr);
  return root_of_unity_of<C>(k + 1);
}

}  // namespace zkfarm
