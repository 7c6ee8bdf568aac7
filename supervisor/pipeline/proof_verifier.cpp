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

std::vector<std::string> ProofVerifier::check_batch(std::span<const std::string_view> proofs,
                                                   std::span<const std::span<const U256>> signals) const {
  std::vector<std::string> out(proofs.size());
  std::visit(
      [&]<class C>(const VerifyingKeyOf<C>& vk) {
        std::vector<ProofOf<C>> decoded;
        std::vector<size_t> at;  // decoded[k] is proofs[at[k]]
        decoded.reserve(proofs.size());
        for (size_t i = 0; i < proofs.size(); ++i) {
          try {
            decoded.push_back(decode_proof<C>(proofs[i]));
            at.push_back(i);
          } catch (const MalformedProof& e) {
            out[i] = std::string("malformed proof: ") + e.what();
          }
        }
        std::vector<BatchItemOf<C>> items;
        for (size_t k = 0; k < decoded.size(); ++k) items.push_back({&decoded[k], signals[at[k]]});
        const std::vector<VerifyResult> verdicts = verify_batch<C>(vk, items);
        for (size_t k = 0; k < verdicts.size(); ++k)
          if (!verdicts[k].ok()) out[at[k]] = verdicts[k].reason;
      },
      vk_);
  return out;
}

}  // namespace zkfarm::supervisor
