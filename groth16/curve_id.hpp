#pragma once
// Which curve a key, a witness or a proof is over, as a value known at run
// time (read from a zkey's header: n8q, q, n8r, r). Code that does arithmetic
// takes the curve's traits type instead (bn254.hpp's Bn254, bls12_381.hpp's
// bls12_381::Curve); the two meet once per key, where a caller dispatches on
// Zkey::curve to the template for that curve with curve_list.hpp's with_curve
// (docs/decisions.md).
#include <cstdint>

namespace zkfarm {

enum class CurveId : uint8_t {
  bn254,      ///< snarkjs "bn128": 32-byte Fq and Fr
  bls12_381,  ///< snarkjs "bls12381": 48-byte Fq, 32-byte Fr
};

/// The name snarkjs and circom give the curve ("bn128", "bls12381"): what
/// proof.json's "curve" holds and what circom's -p takes; "unknown" for an id
/// no curve has (never another curve's name: this is what errors print).
constexpr const char* curve_name(CurveId c) {
  switch (c) {
    case CurveId::bn254: return "bn128";
    case CurveId::bls12_381: return "bls12381";
  }
  return "unknown";
}

}  // namespace zkfarm
