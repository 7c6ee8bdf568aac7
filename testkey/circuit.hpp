#pragma once
// A synthetic R1CS circuit that looks like circom output, for test keys of any
// size: a mix of multiplication chains (c = a·b), additions folded into linear
// combinations (c = (k1·s1 + k2·s2 + k3·s3 + k0)·b), 0/1 signals with their
// boolean constraint b·(b − 1) = 0, and bit packing x = Σ 2^i·b_i.
// Signal layout as circom's: 0 is the constant 1, then the P public inputs, then
// 4 private inputs, then one new signal per constraint but the boolean ones'.
#include <cstdint>
#include <random>
#include <vector>

#include "groth16/bn254.hpp"

namespace zkfarm::testkey {

struct Term {
  uint32_t signal;
  Fr coef;  ///< Montgomery form
};

/// One constraint A·B = C, each a linear combination.
struct Constraint {
  std::vector<Term> a, b, c;
};

/// How a signal's value is computed (so that more witnesses can be made).
struct SignalDef {
  enum Kind : uint8_t { kOne, kInput, kProduct, kBit, kPack } kind;
  uint32_t constraint = 0;  ///< the constraint that defines it (kProduct, kPack)
};

struct Circuit {
  uint32_t n_public = 0;   ///< public inputs (circom: nPubIn; no public outputs)
  uint32_t n_private_inputs = 4;
  std::vector<Constraint> constraints;
  std::vector<SignalDef> signals;  ///< nVars entries

  uint32_t n_vars() const { return uint32_t(signals.size()); }
  /// A satisfying witness (Montgomery form), nVars values: inputs and bits drawn
  /// from `rng`, every other signal computed from them.
  std::vector<Fr> witness(std::mt19937_64& rng) const;
};

/// A circuit of exactly n_constraints constraints over n_public public inputs
/// (every public input appears in some constraint when n_constraints allows).
Circuit make_circuit(uint32_t n_constraints, uint32_t n_public, uint64_t seed);

/// The circuit of a circom .r1cs (any circuit, e.g. circomlib's SHA-256), for
/// a key of it: constraints as they are, nPublic = public outputs + public
/// inputs (snarkjs's count), nVars = the r1cs's wires. `signals` are only
/// counted (SignalDef kInput each): witness() cannot be used, the circuit's
/// own generator makes witnesses. Throws InputError (a bad file, a prime
/// other than BN254's r).
Circuit circuit_from_r1cs(const std::string& path);

/// Σ coef·w[signal] over a linear combination.
Fr eval(const std::vector<Term>& lc, const std::vector<Fr>& w);

}  // namespace zkfarm::testkey
