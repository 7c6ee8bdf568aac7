#pragma once
// Groth16 verification over BLS12-381, the check of snarkjs 0.7's
// groth16_verify.js (Groth, EUROCRYPT 2016, §3.2), as verify.hpp does it for
// BN254:
//   e(−A, B) · e(α, β) · e(vk_x, γ) · e(C, δ) = 1,  vk_x = IC_0 + Σ_{i=1..nPublic} s_i·IC_i
// as one multi-pairing (bls12_381_pairing.hpp). Before the pairing: the
// public signals below r, the proof's coordinates below q, its points on
// their curves and, unlike snarkjs, in their prime-order subgroups (both of
// BLS12-381's cofactors are > 1, G1's too). Written for correctness rather
// than speed: it checks one proof once before it is written out.
#include <span>
#include <string>
#include <vector>

#include "groth16/bls12_381.hpp"
#include "groth16/prover.hpp"
#include "groth16/verify.hpp"
#include "groth16/zkey.hpp"

namespace zkfarm::bls12_381 {

/// A BLS12-381 Groth16 verification key: α (G1), β, γ, δ (G2), IC (nPublic+1
/// G1 points), affine, Montgomery coordinates, each checked on its curve and
/// in its subgroup. Copies the points: the Zkey may be closed afterwards.
class VerifyingKey {
 public:
  /// From a bls12381 proving key's sections 2 and 3. Throws InputError
  /// "KEY: the key is over bn128, this verifier takes bls12381 keys", or
  /// "KEY: section 2/3: NAME is not on the curve" (… "is not in the G2
  /// subgroup", … "is the point at infinity").
  static VerifyingKey from_zkey(const Zkey& key);
  /// From decoded points; `source` names them in errors. ic holds ≥ 1 point.
  VerifyingKey(const G1Affine& alpha1, const G2Affine& beta2, const G2Affine& gamma2, const G2Affine& delta2,
               std::vector<G1Affine> ic, const std::string& source);
  size_t n_public() const { return ic_.size() - 1; }

 private:
  friend VerifyResult verify_proof(const VerifyingKey&, const ProofOf<Curve>&, std::span<const U256>);
  G1Affine alpha1_;
  G2Affine beta2_, gamma2_, delta2_;
  std::vector<G1Affine> ic_;
};

/// Checks `proof` against `vk` and the public signals (canonical integers,
/// size vk.n_public(), public.json's order). Checks, in order: the signal
/// count and range (< r), A and C on G1 and B on the twist (coordinates < q),
/// A, B, C in their subgroups, then the pairing equation. Never throws for a
/// bad proof (only std::bad_alloc can escape). Tens of milliseconds on one core.
VerifyResult verify_proof(const VerifyingKey& vk, const ProofOf<Curve>& proof, std::span<const U256> public_signals);

}  // namespace zkfarm::bls12_381
