#pragma once
// The farm's last gate: a proof from a worker is verified (proof_verifier.hpp,
// about 1 ms on one core for BN254, 20 ms for BLS12-381) against the
// verification data of the key as it was taken at submit, and the partition's
// public signals as they were read then, before anything is journaled or
// written. A worker that is wrong (a faulty device, a witness that does not
// satisfy its circuit, a bug) can therefore never make the farm report a proof
// that `snarkjs groth16 verify` rejects.
#include <map>
#include <memory>
#include <string>

#include "supervisor/pipeline/jobs.hpp"
#include "supervisor/pipeline/proof_verifier.hpp"

namespace zkfarm::supervisor {

/// The verification data of every key the farm proves for, by the key's
/// SHA-256 (the key's path for a job journaled without one). Loop thread only.
class VerifyingKeys {
 public:
  /// Keeps `vk` for the key whose SHA-256 is `sha256` (submit, a circuit
  /// added, a shared queue's claim): later checks need not read the key again.
  void remember(const std::string& sha256, std::shared_ptr<const ProofVerifier> vk);

  /// "" when `proof_bytes` (groth16/proof_codec.hpp's encoding) verify for
  /// partition `p` of `job`: against the key's verification data (made here
  /// from zkfarmd's private copy of the key, job.zkey, when none was kept:
  /// after a restart) and p's public signals (p.public_values, or read back
  /// from p.public_json). Otherwise why not, in words. Never throws.
  std::string check(const Job& job, const Partition& p, const std::string& proof_bytes);

 private:
  std::map<std::string, std::shared_ptr<const ProofVerifier>> by_key_;
};

}  // namespace zkfarm::supervisor
