#pragma once
// A Groth16 setup for a synthetic circuit, with random toxic waste: INSECURE,
// for tests and benchmarks only (whoever ran it knows τ, α, β, γ, δ and can
// forge proofs). The files are those snarkjs reads and writes: .r1cs, .wtns,
// .zkey (Groth16), and the verification key JSON, over the curve C
// (zkfarm::Bn254 "bn128" or bls12_381::Curve "bls12381"): one code path,
// the field widths, primes, point sizes and roots of unity from C's traits.
// setup.cpp instantiates both curves.
#include <string>
#include <vector>

#include "groth16/thread_pool.hpp"
#include "testkey/circuit.hpp"

namespace zkfarm::testkey {

/// τ, α, β, γ, δ: nonzero, and τ outside the domains used (Montgomery form).
template <class C>
struct ToxicWaste {
  typename C::Fr tau, alpha, beta, gamma, delta;
  static ToxicWaste draw(std::mt19937_64& rng);
};

/// PREFIX.r1cs as circom writes it (format version 1: header with n8 and C's
/// r, constraints with canonical coefficients, wire→label map). Throws
/// std::runtime_error on I/O.
template <class C>
void write_r1cs(const Circuit<C>& c, const std::string& path);

/// A .wtns (version 2) of canonical values, with C's r in its header. Throws
/// std::runtime_error on I/O.
template <class C>
void write_wtns(const std::vector<typename C::Fr>& witness, const std::string& path);

/// The proving key as snarkjs's `groth16 setup` lays it out (sections 1–10;
/// the header's n8q/q and n8r/r are C's, points C::kG1Bytes/kG2Bytes), with
/// u_j(τ), v_j(τ), w_j(τ) from the Lagrange basis of the domain (2^k ≥
/// nConstraints + nPublic + 1, k ≤ 27, snarkjs's roots root_of_unity_of<C>),
/// the public inputs' extra A rows, section 4's coefficients as v·R² (C's Fr
/// R), and H on the odd coset: H_i = L_{2i+1}(τ)/δ over the 2n-th roots
/// (snarkjs zkey_new.js writeHs). Also the verification key JSON (snarkjs's
/// fields with "curve": C::kName, without vk_alphabeta_12: that needs a
/// pairing, and snarkjs's verifier does not read it). Throws
/// std::runtime_error on I/O or a domain past 2^27.
template <class C>
void write_zkey(const Circuit<C>& c, const ToxicWaste<C>& tw, const std::string& zkey_path,
                const std::string& vkey_path, ThreadPool& pool);

}  // namespace zkfarm::testkey
