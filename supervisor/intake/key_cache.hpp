#pragma once
// What zkfarmd remembers of proving keys between submits (and between claims
// of a shared queue): a key file's hash by its identity, and a checked key's
// facts by its hash, so that a key of tens of GB is neither read nor checked
// twice. Both thread-safe and bounded.
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "files/input_file.hpp"
#include "supervisor/pipeline/proof_verifier.hpp"

namespace zkfarm::supervisor {

/// "This key file, unchanged (files::FileIdentity), has this SHA-256": a key of
/// tens of GB submitted again is not read again. Thread-safe; the newest 256.
class KeyHashCache {
 public:
  std::string lookup(const files::FileIdentity& id) const;  ///< "" when unknown
  void remember(const files::FileIdentity& id, const std::string& sha);

 private:
  mutable std::mutex m_;
  std::vector<std::pair<files::FileIdentity, std::string>> entries_;
};

/// What a submit needs of a key it has checked: kept by the key's SHA-256,
/// whose private copy (inputs/keys/SHA256.zkey, zkfarmd's, read-only) never
/// changes, so the next job of that key skips Zkey::open's full check.
struct KeyFacts {
  uint32_t n_vars = 0, n_public = 0;
  CurveId curve = CurveId::bn254;
  std::shared_ptr<const ProofVerifier> vk;
};

/// Keys checked at submit, by SHA-256 (hex); the 64 most recent. Thread-safe.
class CheckedKeys {
 public:
  std::optional<KeyFacts> lookup(const std::string& sha) const;
  void remember(const std::string& sha, const KeyFacts& facts);

 private:
  mutable std::mutex m_;
  std::vector<std::pair<std::string, KeyFacts>> entries_;
};

}  // namespace zkfarm::supervisor
