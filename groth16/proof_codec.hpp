#pragma once
// The proof carried by PROVE_DONE and kept in the journal: πA (G1), πB (G2),
// πC (G1), each affine with coordinates n8q bytes little-endian in Montgomery
// form, Fq2 as c0 then c1 — exactly as a zkey stores points (Affine::store);
// (0, 0) is infinity. BN254: 64 + 128 + 64 = 256 bytes; BLS12-381: 96 + 192 +
// 96 = 384 bytes. The size alone says the curve.
#include <cstddef>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include "groth16/curve_id.hpp"
#include "groth16/prover.hpp"

namespace zkfarm {

/// Bytes that are no proof: a size of no curve, a coordinate ≥ q, a point off
/// its curve. The message says which.
class MalformedProof : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Bytes of an encoded proof over curve C: 2·G1 + G2.
template <class C>
inline constexpr size_t kProofBytesOf = 2 * C::kG1Bytes + C::kG2Bytes;
/// BN254's: 256.
inline constexpr size_t kProofBytes = kProofBytesOf<Bn254>;

/// The bytes of `proof` (πA | πB | πC).
template <class C>
std::string encode_proof(const ProofOf<C>& proof);

/// The proof over curve C held by `bytes`. Throws MalformedProof when `bytes`
/// is not exactly kProofBytesOf<C> long, a coordinate is not canonical (≥ q),
/// or a point is neither infinity nor on its curve (a corrupt or foreign message).
template <class C = Bn254>
ProofOf<C> decode_proof(std::string_view bytes);

/// The curve of an encoded proof of `bytes` bytes (256: bn254, 384:
/// bls12_381), or nullopt for any other size.
std::optional<CurveId> proof_curve(size_t bytes);

/// proof.json (proof_to_json) of an encoded proof of either curve, told apart
/// by its size. Throws MalformedProof as decode_proof does, or for a size of
/// no curve.
std::string proof_json_of(std::string_view bytes);

}  // namespace zkfarm
