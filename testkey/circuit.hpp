#pragma once
// A synthetic R1CS circuit that looks like circom output, for test keys of any
// size: a mix of multiplication chains (c = a·b), additions folded into linear
// combinations (c = (k1·s1 + k2·s2 + k3·s3 + k0)·b), 0/1 signals with their
// boolean constraint b·(b − 1) = 0, and bit packing x = Σ 2^i·b_i.
// Signal layout as circom's: 0 is the constant 1, then the P public inputs, then
// 4 private inputs, then one new signal per constraint but the boolean ones'.
// Everything is a template on the curve traits C (zkfarm::Bn254,
// bls12_381::Curve): the circuit is over C's scalar field C::Fr; circuit.cpp
// instantiates both curves.
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "groth16/bls12_381.hpp"
#include "groth16/bn254.hpp"
#include "groth16/curves.hpp"
#include "groth16/r1cs.hpp"

namespace zkfarm::testkey {

template <class C>
struct Term {
  uint32_t signal;
  typename C::Fr coef;  ///< Montgomery form
};

/// One constraint A·B = C, each a linear combination.
template <class C>
struct Constraint {
  std::vector<Term<C>> a, b, c;
};

/// How a signal's value is computed (so that more witnesses can be made).
struct SignalDef {
  enum Kind : uint8_t { kOne, kInput, kProduct, kBit, kPack } kind;
  uint32_t constraint = 0;  ///< the constraint that defines it (kProduct, kPack)
};

template <class C>
struct Circuit {
  using Fr = typename C::Fr;
  uint32_t n_public = 0;   ///< public inputs (circom: nPubIn; no public outputs)
  uint32_t n_private_inputs = 4;
  std::vector<Constraint<C>> constraints;
  std::vector<SignalDef> signals;  ///< nVars entries

  uint32_t n_vars() const { return uint32_t(signals.size()); }
  /// A satisfying witness (Montgomery form), nVars values: inputs and bits drawn
  /// from `rng`, every other signal computed from them.
  std::vector<Fr> witness(std::mt19937_64& rng) const;
};

/// A circuit of exactly n_constraints constraints over n_public public inputs
/// (every public input appears in some constraint when n_constraints allows).
/// The same seed gives the same circuit shape on every curve; the random
/// constants are drawn in C's scalar field.
template <class C>
Circuit<C> make_circuit(uint32_t n_constraints, uint32_t n_public, uint64_t seed);

/// The curve of a circom .r1cs from its prime (circom -p bn128 or -p bls12381),
/// or nullptr for any other prime (goldilocks, ...).
const CurvePrimes* r1cs_curve(const R1cs& r1cs);

/// The circuit of a circom .r1cs (any circuit, e.g. circomlib's SHA-256), for
/// a key of it: constraints as they are, nPublic = public outputs + public
/// inputs (snarkjs's count), nVars = the r1cs's wires. `signals` are only
/// counted (SignalDef kInput each): witness() cannot be used, the circuit's
/// own generator makes witnesses. Throws InputError when the r1cs's prime is
/// not C's r, naming the file, the r1cs's curve and the --curve to use.
template <class C>
Circuit<C> circuit_from_r1cs(const R1cs& r1cs);
/// The same from a path. Throws InputError (a bad file, or a prime as above).
template <class C>
Circuit<C> circuit_from_r1cs(const std::string& path);

/// Σ coef·w[signal] over a linear combination.
template <class C>
typename C::Fr eval(const std::vector<Term<C>>& lc, const std::vector<typename C::Fr>& w);

}  // namespace zkfarm::testkey
