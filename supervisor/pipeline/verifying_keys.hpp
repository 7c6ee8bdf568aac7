#pragma once
// The verification data of every key the farm proves for, for the farm's
// last gate (proof_checks.hpp): a proof from a worker is verified against the
// key as it was taken at submit, and the partition's public signals as they
// were read then, before anything is journaled or written. A worker that is
// wrong (a faulty device, a witness that does not satisfy its circuit, a bug)
// can therefore never make the farm report a proof that `snarkjs groth16
// verify` rejects.
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "supervisor/model/jobs.hpp"
#include "supervisor/pipeline/proof_verifier.hpp"

namespace zkfarm::supervisor {

/// Verification keys by the key's SHA-256 (the key's path for a job
/// journaled without one). Thread-safe: the loop remembers keys, the proof
/// checks' threads look them up.
class VerifyingKeys {
 public:
  /// The name `job`'s key is kept under: its SHA-256, or its path.
  static std::string key_id(const Job& job) { return job.zkey_sha256.empty() ? job.zkey : job.zkey_sha256; }

  /// Keeps `vk` for the key `key_id` (submit, a circuit added, a shared
  /// queue's claim): later checks need not read the key again.
  void remember(const std::string& key_id, std::shared_ptr<const ProofVerifier> vk);

  /// The verification data of key `key_id`: the one kept, or made from
  /// zkfarmd's private copy of the key at `zkey` (immutable, zkfarmd's own:
  /// after a restart) and kept. Throws what Zkey::open and
  /// ProofVerifier::from_zkey throw (InputError naming the file). Two threads
  /// asking for the same missing key may both read it; one copy is kept.
  std::shared_ptr<const ProofVerifier> get(const std::string& key_id, const std::string& zkey);

 private:
  std::mutex mutex_;
  std::map<std::string, std::shared_ptr<const ProofVerifier>> by_key_;
};

/// The public signals of a proof to check: the values read at submit or from
/// the slot (`values`), else (a partition restored after a restart) its
/// public.json (`json`: a JSON array of decimal strings), parsed where it is
/// checked. nullopt when `json` cannot be read back.
std::optional<std::vector<U256>> public_signals_from(std::vector<U256> values, const std::string& json,
                                                     uint32_t n_public);

}  // namespace zkfarm::supervisor
