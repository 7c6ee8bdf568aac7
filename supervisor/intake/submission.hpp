#pragma once
// What a submit and a `circuit add` check and take from a client's files:
// the check's result (SubmitCheck), its context (SubmitContext: where copies
// go, caches, limits), a taken key (TakenKey), a circuit build (CircuitBuild,
// CircuitBuildContext), and the functions that run on the check and build
// pools (submit.cpp, circuits.cpp). Nothing here touches the loop's state.
#include <atomic>
#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "files/input_file.hpp"
#include "protocol/control_requests.hpp"
#include "supervisor/check_pool.hpp"
#include "supervisor/model/jobs.hpp"
#include "supervisor/intake/key_cache.hpp"
#include "supervisor/ledger/ledger.hpp"
#include "supervisor/model/peer.hpp"
#include "supervisor/pipeline/proof_verifier.hpp"
#include "witgen/generator_run.hpp"
#include "witgen/sandbox.hpp"

namespace zkfarm::supervisor {

/// What checking a submitted job's files gives: the job (not yet journaled, no
/// id) with its key's verification data, or the error that refuses it.
struct SubmitCheck {
  std::optional<Job> job;
  std::string error;
  std::shared_ptr<const ProofVerifier> vk;
  std::string storage_fault;  ///< non-empty: the state dir could not take the copies (closes intake)
  std::string token;          ///< the job's folder under inputs/jobs
  double key_ms = 0, witness_ms = 0;  ///< time to take the key, then the witnesses
  uint64_t witness_bytes = 0;         ///< bytes of witnesses copied
  std::optional<bool> key_cached;     ///< the key was checked before (CheckedKeys), once it was looked up
};

/// A registered circuit as a submit of inputs needs it (looked up on the
/// loop when the submit starts, so the check reads no shared table).
struct CircuitForSubmit {
  CircuitRecord record;
  std::string generator;  ///< its generator's executable (STATE/circuits/HASH/generator)
  std::string zkey;       ///< its key's private copy (STATE/inputs/keys/SHA256.zkey)
};

/// What a submit's check needs besides the request: where inputs are kept
/// (STATE/inputs, or a shared queue's shared dir), the job's own folder name
/// under inputs/jobs, the caches.
struct SubmitContext {
  std::string inputs_dir;
  std::string token;
  std::shared_ptr<KeyHashCache> key_hashes;
  std::shared_ptr<CheckedKeys> checked_keys;
  /// Witness copies of every submit, submit_copies at once, first submitted first.
  std::shared_ptr<CheckPool> copy_pool;
  /// A submit of inputs: the circuit it names (nullopt when there is none by that name).
  std::optional<CircuitForSubmit> circuit;
  uint64_t input_max_bytes = 64ull << 20;
  uint64_t input_max_signals = 65536;        ///< distinct names in one input.json
  uint64_t input_max_values = 1ull << 24;    ///< values in one input.json
  uint64_t job_input_max_bytes = 1ull << 30;  ///< all input.json files of the job together
  /// A shared queue: witness copies are hashed (their SHA-256 goes in the
  /// queue, and every host checks it before use).
  bool shared = false;
  /// Set by the loop when the submit's deadline (submit_timeout_ms) passes:
  /// the check stops at its next copy chunk, file or few thousand JSON tokens
  /// instead of running on after its client was told "refused".
  std::shared_ptr<std::atomic<bool>> cancel = std::make_shared<std::atomic<bool>>(false);
};

/// A proving key taken from a client's file (take_key): its private copy
/// (STATE/inputs/keys/SHA256.zkey), the hash, what a submit needs of it.
struct TakenKey {
  std::string path, sha256;
  KeyFacts facts;
  bool cached = false;  ///< checked before (CheckedKeys)
  double ms = 0;        ///< time taken
};

/// A random 96-bit name in hex (folders of submits and circuit builds).
std::string random_token();

/// Opens a file a client names, with the client's rights (files/fs_credentials:
/// when zkfarmd is root; otherwise the file's mode bits must let the client
/// read it), refusing anything but a regular file without blocking. Throws
/// files::FileError naming `path`.
files::UniqueFd open_client_file(const std::string& path, const Peer& peer);

/// What `circuit add` made on a build thread (circuits.cpp): the circuit, or why not.
struct CircuitBuild {
  std::optional<CircuitRecord> circuit;
  std::string error;
  std::shared_ptr<const ProofVerifier> vk;
};

/// Where and how `circuit add` builds generators.
struct CircuitBuildContext {
  std::string circuits_dir;  ///< STATE/circuits: HASH/generator, by content hash
  std::string witgen_root;   ///< the generator hosts' sources (witgen::find_witgen_root)
  unsigned jobs = 1;         ///< compilers at once
  std::chrono::milliseconds timeout{0};
  /// A shared queue's shared dir: the build is published under
  /// SHARED/generators by the SHA-256 of each file ("" on one host).
  std::string shared_dir;
  witgen::Sandbox build_sandbox;     ///< the compilers' (circuit_build_cpu_s; witgen/sandbox.hpp)
  uint64_t build_memory_bytes = 0;   ///< each compiler's RLIMIT_DATA (circuit_build_memory_mib)
  uint64_t wasm_max_bytes = 0;       ///< circuit_wasm_max_mib
  bool graph = true;                 ///< build a witness graph (witness_engine != "generator")
  uint64_t graph_max_nodes = 0;      ///< witness_graph_max_nodes
  witgen::GenerateOptions info_run;  ///< the built generator's --info run (witness limits)
};

/// `circuit add` on a build thread: takes the key and the generator sources
/// with `peer`'s rights, builds (or finds) the generator, checks it against
/// the key. Never throws.
CircuitBuild build_circuit(const protocol::CircuitAdd& req, const Peer& peer, const SubmitContext& ctx,
                           const CircuitBuildContext& bc);

/// A circuit as `circuit list` and `circuit add` answer it (docs/protocol.md).
/// A circuit as `circuit add|list` answer it; `witness`: how its witnesses
/// are made ("graph", "native (REASON)": witgen::witness_engine_line).
nlohmann::json circuit_json(const CircuitRecord& c, const std::string& witness);

/// Opens `source` with `peer`'s rights, stores its content once under
/// ctx.inputs_dir/keys (not read again while the file is unchanged), and
/// checks it (stored_key_facts). Throws InputError naming `source` for a bad
/// key, files::FileError for a file that cannot be taken.
TakenKey take_key(const std::string& source, const Peer& peer, const SubmitContext& ctx);

/// What a submit needs of the stored key at `path` (content `sha`): from
/// `checked` if it was checked before (then *cached = true), else by a full
/// Zkey::open, remembered. Throws InputError naming `source` (the client's name).
KeyFacts stored_key_facts(const std::string& path, const std::string& source, const std::string& sha,
                          CheckedKeys& checked, bool* cached = nullptr);

/// Checks a submit request on a CheckPool thread (submit.cpp): opens the
/// client's files with `peer`'s rights, copies them into the state dir by
/// content, validates the copies. Never throws; the error names the client's file.
SubmitCheck check_submission(const protocol::Submit& req, const Peer& peer, const SubmitContext& ctx);

}  // namespace zkfarm::supervisor
