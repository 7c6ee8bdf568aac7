#pragma once
// The farm's last gate, for keys of either curve: a key's verification data,
// made once per key (at submit, or from zkfarmd's private copy after a
// restart), and the check of one encoded proof (groth16/proof_codec.hpp)
// against it. The curve is the key's (Zkey::curve); the proof must be of the
// same curve's size, or it is malformed.
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "groth16/curve_list.hpp"
#include "groth16/verify.hpp"
#include "groth16/zkey.hpp"

namespace zkfarm::supervisor {

class ProofVerifier {
 public:
  /// The verification key of `key` over the key's curve (verify.hpp's
  /// VerifyingKeyOf<C>). Throws InputError naming the key file for points no
  /// honest setup makes.
  static std::shared_ptr<const ProofVerifier> from_zkey(const Zkey& key);

  CurveId curve() const;
  size_t n_public() const;

  /// For each i, "" when proofs[i] (groth16/proof_codec.hpp's encoding)
  /// decodes as a proof of the key's curve and verifies against signals[i]
  /// (canonical, n_public() of them; the spans have the same length);
  /// otherwise why not: "malformed proof: …" or verify_proof's reason. The
  /// proofs that decode are verified in one batch (verify.hpp's
  /// verify_batch: a random linear combination, halved down to the bad
  /// proofs when it fails). Never throws for bad proofs. Thread-safe.
  std::vector<std::string> check_batch(std::span<const std::string_view> proofs,
                                       std::span<const std::span<const U256>> signals) const;

 private:
  using Key = Curves::Variant<VerifyingKeyOf>;
  explicit ProofVerifier(Key vk) : vk_(std::move(vk)) {}
  Key vk_;
};

}  // namespace zkfarm::supervisor
