// The farm's last gate: a proof from a worker is verified (proof_verifier.hpp,
// about 1 ms on one core for BN254, 20 ms for BLS12-381) against the verification data of the key as it was
// taken at submit, and the partition's public signals as they were read then,
// before anything is journaled or written. A worker that is wrong — a faulty
// device, a witness that does not satisfy its circuit, a bug — can therefore
// never make the farm report a proof that `snarkjs groth16 verify` rejects.
#include <nlohmann/json.hpp>

#include "groth16/decimal.hpp"
#include "groth16/errors.hpp"
#include "groth16/proof_json.hpp"
#include "protocol/proof_codec.hpp"
#include "supervisor/supervisor.hpp"

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

std::string Supervisor::check_proof(const Job& job, const Partition& p, const std::string& proof_bytes) {
  // The verification key: made at submit; after a restart, from the private
  // copy of the key (immutable, zkfarmd's own), once per key.
  auto& vk = verifying_keys_[job.zkey_sha256.empty() ? job.zkey : job.zkey_sha256];
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

namespace zkfarm::supervisor {

// The witness of a partition of circom inputs was made by its synthesis
// worker; the supervisor reads values 1..nPublic from the slot (its own
// arena) rather than trusting a copy in the worker's answer.
void Supervisor::take_public_signals(const Job& job, const Partition& p) {
  const uint64_t bytes = (uint64_t(job.n_public) + 1) * 32;
  const auto* w = reinterpret_cast<const U256*>(arena_.at(p.slot->offset, bytes));
  std::vector<U256> pub(w, w + job.n_public + 1);
  jobs_.set_public_signals({job.id, p.index}, public_to_json(pub.data(), job.n_public),
                           std::vector<U256>(pub.begin() + 1, pub.end()));
}

}  // namespace zkfarm::supervisor
