#include "supervisor/proof_verifier.hpp"

#include "protocol/messages.hpp"
#include "protocol/proof_codec.hpp"

namespace zkfarm::supervisor {

std::shared_ptr<const ProofVerifier> ProofVerifier::from_zkey(const Zkey& key) {
  if (key.curve == CurveId::bls12_381) {
    return std::shared_ptr<const ProofVerifier>(new ProofVerifier(Key(bls12_381::VerifyingKey::from_zkey(key))));
  }
  return std::shared_ptr<const ProofVerifier>(new ProofVerifier(Key(VerifyingKey::from_zkey(key))));
}

CurveId ProofVerifier::curve() const {
  return std::holds_alternative<VerifyingKey>(vk_) ? CurveId::bn254 : CurveId::bls12_381;
}

size_t ProofVerifier::n_public() const {
  return std::visit([](const auto& vk) { return vk.n_public(); }, vk_);
}

std::string ProofVerifier::check(std::string_view proof_bytes, std::span<const U256> public_signals) const {
  try {
    VerifyResult r;
    if (const auto* vk = std::get_if<VerifyingKey>(&vk_)) {
      r = verify_proof(*vk, protocol::decode_proof<Bn254>(proof_bytes), public_signals);
    } else {
      r = bls12_381::verify_proof(std::get<bls12_381::VerifyingKey>(vk_),
                                  protocol::decode_proof<bls12_381::Curve>(proof_bytes), public_signals);
    }
    return r.ok() ? std::string() : r.reason;
  } catch (const protocol::ProtocolError& e) {
    return std::string("malformed proof: ") + e.what();
  }
}

}  // namespace zkfarm::supervisor
