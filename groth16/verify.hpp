#pragma once
// Groth16 verification over a curve C (curve traits; BN254 and BLS12-381),
// the check of snarkjs 0.7's groth16_verify.js (Groth, "On the size of
// pairing-based non-interactive arguments", EUROCRYPT 2016, §3.2):
//   e(−A, B) · e(α, β) · e(vk_x, γ) · e(C, δ) = 1,  vk_x = IC_0 + Σ_{i=1..nPublic} s_i·IC_i
// with the public signals s_i (witness values 1..nPublic, canonical, < r),
// as one multi-pairing (pairing.hpp). Before the pairing, as snarkjs does, the
// public signals must be below r and the proof's points on their curves;
// unlike snarkjs, B must also lie in G2 (the twist's cofactor is not 1), and
// A and C in G1 where G1's cofactor is not 1 either (BLS12-381's).
// zkfarm::VerifyingKey is BN254's, bls12_381::VerifyingKey BLS12-381's.
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "groth16/curve_list.hpp"
#include "groth16/pairing.hpp"
#include "groth16/prover.hpp"
#include "groth16/zkey.hpp"

namespace zkfarm {

/// Why a proof was refused (kNone: it verifies).
enum class VerifyFault : uint8_t {
  kNone,
  kPublicCount,    ///< not exactly nPublic public signals
  kPublicRange,    ///< a public signal ≥ r
  kNotOnCurve,     ///< a proof point off its curve, or a coordinate ≥ q
  kNotInSubgroup,  ///< a proof point on its curve but not in its subgroup (BN254: B only)
  kPairing,        ///< well formed, and the pairing equation fails
};

/// The verdict of verify_proof: ok() when the proof verifies; otherwise the
/// fault and a short reason without any input values, e.g.
/// "proof point B is not in the G2 subgroup".
struct VerifyResult {
  VerifyFault fault = VerifyFault::kNone;
  std::string reason;

  bool ok() const { return fault == VerifyFault::kNone; }
  explicit operator bool() const { return ok(); }
};

template <class C>
class VerifyingKeyOf;
template <class C>
VerifyResult verify_proof(const VerifyingKeyOf<C>& vk, const ProofOf<C>& proof, std::span<const U256> public_signals);

/// One proof of a batch for verify_batch: the proof and its public signals
/// (as verify_proof takes them). Both are only read, and must outlive the call.
template <class C>
struct BatchItemOf {
  const ProofOf<C>* proof;
  std::span<const U256> public_signals;
};
template <class C>
std::vector<VerifyResult> verify_batch(const VerifyingKeyOf<C>& vk, std::span<const BatchItemOf<C>> items,
                                       size_t* pairings = nullptr);

/// A Groth16 verification key over C: α (G1), β, γ, δ (G2), IC (nPublic+1
/// G1 points), all affine with Montgomery coordinates, validated (on their
/// curves, G2 points and, where G1's cofactor is not 1, G1 points in their
/// subgroups) and prepared for fast checks: the Miller loop of (α, β), the
/// lines of γ and δ, and signed 4-bit window tables of IC_1.. (8 affine
/// multiples each, 512 bytes per public signal on BN254). Building one costs
/// about 0.8 ms plus 7 µs per public signal on one core for BN254
/// (bench/kernels_bench.cpp). The points are copied: the Zkey may be closed
/// afterwards. Immutable; copies share the prepared data (cheap), and
/// verify_proof may run on one key from many threads at once.
template <class C>
class VerifyingKeyOf {
 public:
  using Curve = C;
  using G1A = Affine<typename C::G1Params>;
  using G2A = Affine<typename C::G2Params>;

  /// From a proving key's sections 2 (α1, β2, γ2, δ2) and 3 (IC), the points
  /// `snarkjs zkey export verificationkey` exports. Throws InputError "KEY:
  /// the key is over bls12381, this verifier takes bn128 keys" for a key of
  /// another curve, and "KEY: section 2/3: NAME is not on the curve" (or "…
  /// is not in the G2 subgroup", "… is the point at infinity") for a key no
  /// honest setup makes.
  static VerifyingKeyOf from_zkey(const Zkey& key);

  /// From points already decoded (e.g. a snarkjs verification_key.json);
  /// `source` names them in errors: InputError "SOURCE: gamma2 is not in the G2
  /// subgroup". ic must hold at least one point (IC_0).
  VerifyingKeyOf(const G1A& alpha1, const G2A& beta2, const G2A& gamma2, const G2A& delta2, std::vector<G1A> ic,
                 const std::string& source);

  size_t n_public() const { return ic_.size() - 1; }
  const G1A& alpha1() const { return alpha1_; }
  const G2A& beta2() const { return beta2_; }
  const G2A& gamma2() const { return gamma2_; }
  const G2A& delta2() const { return delta2_; }
  const std::vector<G1A>& ic() const { return ic_; }

 private:
  struct Prepared;
  friend VerifyResult verify_proof<C>(const VerifyingKeyOf&, const ProofOf<C>&, std::span<const U256>);
  friend std::vector<VerifyResult> verify_batch<C>(const VerifyingKeyOf&, std::span<const BatchItemOf<C>>, size_t*);
  /// vk_x = IC_0 + Σ s_i·IC_i (s canonical, size n_public()).
  G1A public_input_point(std::span<const U256> s) const;
  /// t_0·IC_0 + Σ t_i·IC_i (t canonical, size n_public() + 1), in XYZZ.
  Xyzz<typename C::G1Params> ic_combination(std::span<const U256> t) const;
  /// Whether the proofs `idx` of `items` (each well formed, in its subgroups)
  /// pass the batched pairing check together (verify_batch).
  bool batch_holds(std::span<const BatchItemOf<C>> items, std::span<const size_t> idx) const;
  /// Whether `proof` (well formed, in its subgroups) passes the pairing
  /// equation with `public_signals`: verify_proof after its prechecks.
  bool pairing_holds(const ProofOf<C>& proof, std::span<const U256> public_signals) const;

  G1A alpha1_;
  G2A beta2_, gamma2_, delta2_;
  std::vector<G1A> ic_;
  std::shared_ptr<const Prepared> prepared_;
};

/// Checks `proof` against `vk` and the public signals (canonical integers, not
/// Montgomery: the witness values 1..nPublic that public.json lists, in that
/// order; size must be vk.n_public()). Checks, in order: the signal count and
/// range, A and C on G1 and B on the twist (coordinates < q), then the
/// subgroups (where G1's cofactor is not 1: A in G1, B in G2, C in G1;
/// otherwise B in G2 alone), then the pairing equation. BN254: about 1.3 ms on
/// one core plus about 14 µs per public signal of random value (less for
/// small values; bench/kernels_bench.cpp). Never throws for bad proofs (only
/// std::bad_alloc can escape).
template <class C>
VerifyResult verify_proof(const VerifyingKeyOf<C>& vk, const ProofOf<C>& proof, std::span<const U256> public_signals);

/// Checks many proofs of one key at once, with the verdicts verify_proof
/// would give each (one VerifyResult per item, in order; the reasons are
/// the same words). The form and subgroup checks run per proof as in
/// verify_proof; the proofs that pass them are checked together by a random
/// linear combination of their Groth16 equations (Bellare, Garay, Rabin,
/// "Fast batch verification for modular exponentiation and digital
/// signatures", EUROCRYPT 1998, the small-exponents test; as bellman's and
/// arkworks' batch verifiers use it): with fresh random 128-bit ρ_j from
/// getrandom, ρ_j ≠ 0,
///   Π_j e(ρ_j·A_j, B_j) · e(−(Σρ_j)·α, β) · e(−Σ_j ρ_j·vk_x_j, γ) · e(−Σ_j ρ_j·C_j, δ) = 1,
/// where Σ_j ρ_j·vk_x_j = (Σρ_j)·IC_0 + Σ_i (Σ_j ρ_j·s_ji)·IC_i is one
/// combination of IC: one multi-pairing of n + 3 Miller loops and one final
/// exponentiation for n proofs, instead of n of each. A set of proofs that
/// contains a false one passes with probability at most 2⁻¹²⁸ (about 1/ρ's
/// range), whatever the prover chose, because ρ is drawn after the proofs
/// are fixed. When the check fails, the set is split in halves and each half
/// checked again, down to single proofs, which get verify_proof's own
/// verdict: a bad proof is found and refused alone, and the good proofs of a
/// failing batch still pass (b bad proofs in n cost about 2·b·log₂(n) extra
/// checks). Each proof's form and subgroups are checked once, whatever the
/// halving. `pairings` (may be null) receives how many pairing checks ran
/// (batched or single): 1 for a batch that holds. Never throws for bad
/// proofs (std::bad_alloc, or std::system_error when getrandom fails, can
/// escape). Thread-safe on one key as verify_proof.
template <class C>
std::vector<VerifyResult> verify_batch(const VerifyingKeyOf<C>& vk, std::span<const BatchItemOf<C>> items,
                                       size_t* pairings);

#define ZKFARM_VERIFY_EXTERN(C)        \
  extern template class VerifyingKeyOf<C>; \
  extern template VerifyResult verify_proof<C>(const VerifyingKeyOf<C>&, const ProofOf<C>&, std::span<const U256>); \
  extern template std::vector<VerifyResult> verify_batch<C>(const VerifyingKeyOf<C>&, std::span<const BatchItemOf<C>>, \
                                                           size_t*);
ZKFARM_FOR_EACH_CURVE(ZKFARM_VERIFY_EXTERN)
#undef ZKFARM_VERIFY_EXTERN

/// BN254's verification key.
using VerifyingKey = VerifyingKeyOf<Bn254>;

namespace bls12_381 {
/// BLS12-381's verification key.
using VerifyingKey = VerifyingKeyOf<Curve>;
using zkfarm::verify_batch;
using zkfarm::verify_proof;
}  // namespace bls12_381

}  // namespace zkfarm
