#pragma once
// A Groth16 setup for a synthetic circuit, with random toxic waste: INSECURE,
// for tests and benchmarks only (whoever ran it knows τ, α, β, γ, δ and can
// forge proofs). The files are those snarkjs reads and writes: .r1cs, .wtns,
// .zkey (Groth16, bn128), and the verification key JSON.
#include <string>
#include <vector>

#include "groth16/thread_pool.hpp"
#include "testkey/circuit.hpp"

namespace zkfarm::testkey {

/// τ, α, β, γ, δ: nonzero, and τ outside the domains used (Montgomery form).
struct ToxicWaste {
  Fr tau, alpha, beta, gamma, delta;
  static ToxicWaste draw(std::mt19937_64& rng);
};

/// PREFIX.r1cs as circom writes it (format version 1: header, constraints with
/// canonical coefficients, wire→label map). Throws std::runtime_error on I/O.
void write_r1cs(const Circuit& c, const std::string& path);

/// A .wtns (version 2) of canonical values. Throws std::runtime_error on I/O.
void write_wtns(const std::vector<Fr>& witness, const std::string& path);

/// The proving key as snarkjs's `groth16 setup` lays it out (sections 1–10), with
/// u_j(τ), v_j(τ), w_j(τ) from the Lagrange basis of the domain (2^k ≥
/// nConstraints + nPublic + 1, k ≤ 27), the public inputs' extra A rows, and H
/// on the odd coset: H_i = L_{2i+1}(τ)/δ over the 2n-th roots (snarkjs zkey_new.js
/// writeHs). Also the verification key JSON (snarkjs's fields, without
/// vk_alphabeta_12: that needs a pairing, and snarkjs's verifier does not read it).
/// Throws std::runtime_error on I/O or a domain past 2^27.
void write_zkey(const Circuit& c, const ToxicWaste& tw, const std::string& zkey_path,
                const std::string& vkey_path, ThreadPool& pool);

}  // namespace zkfarm::testkey
