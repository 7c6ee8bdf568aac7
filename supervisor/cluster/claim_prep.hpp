#pragma once
// A claimed partition's files, made ready on this host before it is
// dispatched (docs/cluster.md). The bytes come from the shared dir (a folder
// every host mounts, written by the host that took the submit) and are named
// there by their content: before anything uses them they are copied into this
// host's state dir and their SHA-256 is checked against the queue's row, so a
// file changed, truncated or swapped on the shared mount is refused, and what
// the workers read is a private copy no other host can touch. Runs on a
// preparation thread; reads only its arguments and the files they name.
#include <memory>
#include <string>

#include "supervisor/ledger/ledger.hpp"
#include "supervisor/intake/key_cache.hpp"

namespace zkfarm::supervisor {

/// Where a claim's files come from and go.
struct ClaimDirs {
  std::string shared_dir;  ///< the shared folder (keys/, jobs/)
  std::string keys_dir;    ///< STATE/inputs/keys: private key copies, SHA256.zkey
  std::string claims_dir;  ///< STATE/inputs/claims: TOKEN.wtns, TOKEN.json
};

/// The file in the shared dir that names the queue it belongs to (its
/// `queue_id` in zkfarm_meta): written by the host that started the queue,
/// checked by every host at start (an empty mount point, or another queue's
/// folder, is refused) and when a shared file is missing.
inline constexpr const char* kSharedMarker = ".zkfarm-queue";

/// True for 64 lowercase hex digits (a SHA-256 as the queue names files by).
bool is_sha256(const std::string& s);

/// A circuit's generator build for a job of inputs: where this host keeps it
/// (STATE/circuits/HASH/generator) and the SHA-256s of its files in SHARED/generators.
struct GeneratorFiles {
  std::string path;
  std::string exe_sha256, dat_sha256;  ///< SHARED/generators/SHA256 ("" dat: none)
  /// Its witness graph (SHARED/generators/SHA256, "" : none), copied beside
  /// the generator as `graph`, and graph.slower's text ("" : none).
  std::string graph_sha256, graph_slower;
};

/// A claim made ready, or why not.
struct PreparedClaim {
  ClaimedPartition claim;
  std::string zkey_sha256;
  std::string zkey;        ///< the key's private copy
  std::string wtns, input; ///< the witness's or the input's private copy
  KeyFacts key;            ///< the key's facts (CheckedKeys)
  /// A witness: its public signals (values 1..nPublic of the checked copy),
  /// as public.json and as the values the proof is verified against.
  std::string public_json;
  std::vector<U256> public_values;
  std::string error;       ///< "" when ready; else names the shared file and the fault
  /// The fault is this host's (its shared mount fails: EIO, ESTALE,
  /// ENOTCONN), not the partition's: the lease goes back without counting.
  bool host_fault = false;
};

/// Copies and checks what `c` needs: the key (SHA-256 `zkey_sha256`, once per
/// host: kept under keys_dir by its hash), the witness (c.wtns, checked
/// against c.wtns_sha256) or the input (c.input's bytes) and, for a job of
/// inputs, the generator (fetched once per host). Never throws.
PreparedClaim prepare_claim(const ClaimedPartition& c, const std::string& zkey_sha256, const ClaimDirs& dirs,
                            CheckedKeys& checked, const GeneratorFiles& generator = {});

/// Removes the private copies of a claim that ended here (its lease token).
void remove_claim_files(const ClaimDirs& dirs, uint64_t token);

}  // namespace zkfarm::supervisor
