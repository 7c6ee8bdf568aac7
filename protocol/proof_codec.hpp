#pragma once
// The 256-byte proof carried by PROVE_DONE: πA (G1, 64 bytes), πB (G2, 128
// bytes), πC (G1, 64 bytes), each affine with coordinates 32 bytes
// little-endian in Montgomery form, Fq2 as c0 then c1 — exactly as a zkey
// stores points (G1Affine::store / G2Affine::store); (0, 0) is infinity.
#include <cstddef>
#include <string>
#include <string_view>

#include "groth16/prover.hpp"

namespace zkfarm::protocol {

/// Bytes of an encoded proof: 64 + 128 + 64.
inline constexpr size_t kProofBytes = 256;

/// The 256 bytes of `proof` (πA | πB | πC).
std::string encode_proof(const Proof& proof);

/// The proof held by `bytes`. Throws ProtocolError when `bytes` is not exactly
/// kProofBytes long, a coordinate is not canonical (≥ q), or a point is
/// neither infinity nor on its curve (a corrupt or foreign message).
Proof decode_proof(std::string_view bytes);

}  // namespace zkfarm::protocol
