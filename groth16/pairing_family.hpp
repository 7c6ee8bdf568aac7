#pragma once
// The two facts of a pairing-friendly curve that change the pairing's
// algorithm, not just its constants; each curve's traits name them
// (bn254.hpp, bls12_381.hpp) and pairing.hpp branches on them at compile time.
#include <cstdint>

namespace zkfarm {

/// How the curve's parameter x makes q and r, which fixes the Miller loop's
/// length and the final exponentiation's hard part.
enum class PairingFamily : uint8_t {
  bn,    ///< Barreto–Naehrig: loop 6x+2 plus two Frobenius lines; hard part by Scott et al.'s chain in x
  bls12, ///< Barreto–Lynn–Scott, k = 12: loop x; hard part (q⁴ − q² + 1)/r as the curve's own integer
};

/// Which sextic twist G2 lives on, y² = x³ + b/ξ (D) or y² = x³ + b·ξ (M),
/// which places a Miller-loop line's three coefficients differently in Fq12.
enum class TwistType : uint8_t {
  d,  ///< divisive: ψ(x, y) = (x·w², y·w³); lines are sparse in w⁰, w, w³ ("034")
  m,  ///< multiplicative: ψ(x, y) = (x/w², y/w³); lines are sparse in w⁰, w², w³ ("014")
};

}  // namespace zkfarm
