#include "supervisor/pipeline/proof_verifier.hpp"

#include "protocol/messages.hpp"
#include "groth16/proof_codec.hpp"

namespace zkfarm::supervisor {

std::shared_ptr<const ProofVerifier> ProofVerifier::from_zkey(const Zkey& key) {
  return with_curve(key.curve, [&]<class C>(std::type_identity<C>) {
    return std::shared_ptr<const ProofVerifier>(new ProofVerifier(Key(VerifyingKeyOf<C>::from_zkey(key))));
  });
}

CurveId ProofVerifier::curve() const {
  return std::visit([]<class C>(const VerifyingKeyOf<C>&) { return C::kId; }, vk_);
}

size_t ProofVerifier::n_public() const {
  return std::visit([](const auto& vk) { return vk.n_public(); }, vk_);
}

std::string ProofVerifier::check(std::string_view proof_bytes, std::span<const U256> public_signals) const {
  try {
    const VerifyResult r = std::visit(
        [&]<class C>(const VerifyingKeyOf<C>& vk) {
          return verify_proof(vk, decode_proof<C>(proof_bytes), public_signals);
        },
        vk_);
    return r.ok() ? std::string() : r.reason;
  } catch (const MalformedProof& e) {
    return std::string("malformed proof: ") + e.what();
  }
}

}  // namespace zkfarm::supervisor
