// VerifyingKeys (verifying_keys.hpp): the check of a worker's proof.
#include <nlohmann/json.hpp>

#include "groth16/decimal.hpp"
#include "groth16/errors.hpp"
#include "groth16/proof_json.hpp"
#include "groth16/proof_codec.hpp"
#include "supervisor/pipeline/verifying_keys.hpp"

namespace zkfarm::supervisor {

namespace {

// public.json (an array of decimal strings) back to the signals.
std::optional<std::vector<U256>> parse_public(const std::string& text) {
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_array()) return std::nullopt;
  std::vector<U256> out;
  for (const auto& v : j) {
    if (!v.is_string()) return std::nullopt;
    auto x = parse_decimal(v.get<std::string>());
    if (!x) return std::nullopt;
    out.push_back(*x);
  }
  return out;
}

}  // namespace

void VerifyingKeys::remember(const std::string& sha256, std::shared_ptr<const ProofVerifier> vk) {
  if (vk) by_key_[sha256] = std::move(vk);
}

std::string VerifyingKeys::check(const Job& job, const Partition& p, const std::string& proof_bytes) {
  // The verification key: made at submit; after a restart, from the private
  // copy of the key (immutable, zkfarmd's own), once per key.
  auto& vk = by_key_[job.zkey_sha256.empty() ? job.zkey : job.zkey_sha256];
  if (!vk) {
    try {
      vk = ProofVerifier::from_zkey(Zkey::open(job.zkey));
    } catch (const std::exception& e) {
      return std::string("cannot read the key's verification data: ") + e.what();
    }
  }
  std::vector<U256> parsed;
  std::span<const U256> pub = p.public_values;
  if (pub.empty() && job.n_public > 0) {
    auto got = parse_public(p.public_json);
    if (!got) return "the partition's public.json cannot be read back";
    parsed = std::move(*got);
    pub = parsed;
  }
  return vk->check(proof_bytes, pub);
}

}  // namespace zkfarm::supervisor
