#pragma once
// The ledger: the durable record of jobs, their partitions, the claims on
// them and their proofs, behind one interface with two implementations:
//   Journal (journal.hpp)    SQLite under the state dir: one host, the
//                            embedded default; every partition is this
//                            host's, so claims are implicit;
//   PgQueue (pg_queue.hpp)   PostgreSQL shared by several hosts: partitions
//                            are claimed into leases, and a proof is stored
//                            only under the current lease (fencing).
// The supervisor calls a ledger only from its ledger thread (background.hpp),
// in the order the loop posted the calls; none is thread-safe.
//
// Faults are JournalError (journal_error.hpp) naming the store, the operation
// and the cause; storage_fault() says that retrying later may work (a full
// disk, a database that is restarting), so the write is kept and retried.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "supervisor/jobs.hpp"
#include "supervisor/journal_error.hpp"

namespace zkfarm::supervisor {

/// A stored proof: the encoded proof (protocol/proof_codec.hpp; 256 or 384
/// bytes) and the text of public.json.
struct JournaledProof {
  std::string proof;
  std::string public_json;
};

/// A circuit registered with `zkfarmctl circuit add` (docs/witness.md): its
/// witness generator (built under STATE/circuits/GENERATOR/) and its proving
/// key (STATE/inputs/keys/ZKEY_SHA256.zkey).
struct CircuitRecord {
  std::string name;
  std::string kind;          ///< "wasm" or "native"
  std::string generator;     ///< the generator's source hash (witgen::source_hash)
  std::string zkey_sha256;
  std::string zkey_source;   ///< the key's path as the client named it
  std::string source;        ///< the wasm or --c folder as the client named it
  uint32_t owner_uid = 0;    ///< who added it (may remove it; so may admins)
  int64_t added_ms = 0;      ///< Unix ms
  uint32_t n_vars = 0, n_public = 0;
  /// A shared queue: the built generator's files as every host fetches them
  /// (SHARED/generators/SHA256), by their SHA-256; "" on one host.
  std::string exe_sha256, dat_sha256;
  /// The circuit's input signals as its generator's --info lists them
  /// (witgen::signal_shapes_json), checked against every input at submit;
  /// "" when not known (a circuit added before zkfarmd asked for them).
  std::string inputs;
};

/// A proof to store: what add_proof records besides the partition.
struct ProofRecord {
  std::string proof;        ///< the encoded proof (256 or 384 bytes), verified before it gets here
  int64_t proved_ms = 0;    ///< Unix ms
  int64_t synth_ms = 0, prove_ms = 0;  ///< stage times of the attempt that made it
  /// public.json of a partition of circom inputs (its public signals came
  /// with its witness); empty for a partition of witnesses (set at submit).
  std::string public_json;
  /// The claim it was proved under (PgQueue: the lease's fencing token); 0
  /// for a ledger without claims.
  uint64_t lease_token = 0;
};

/// What add_proof did.
enum class ProofStored {
  kStored,     ///< the partition's one proof, now durable
  kDuplicate,  ///< the partition already had a proof; that one is kept
  kFenced,     ///< the claim is no longer current (the lease expired or was
               ///< taken over, the job ended): nothing stored
};

class Ledger {
 public:
  virtual ~Ledger() = default;
  /// "sqlite" or "postgresql" (status, logs).
  virtual const char* kind() const = 0;
  /// Where it is, for messages (a file, or a database URL without its password).
  virtual std::string where() const = 0;

  /// Inserts the job and its partitions in one transaction and returns the
  /// id it was given. Durable when this returns; throws JournalError, then
  /// nothing of the job is stored.
  virtual uint64_t add_job(const Job& job) = 0;
  /// Stores the proof of (job, partition). Throws JournalError (also when
  /// the partition does not exist); then nothing changed.
  virtual ProofStored add_proof(uint64_t job, uint32_t index, const ProofRecord& proof) = 0;
  /// Records a job's terminal state (done, failed, cancelled) and when it
  /// finished (Unix ms). Throws JournalError; then nothing changed.
  virtual void finish_job(uint64_t job, JobState state, const std::string& error, int64_t finished_ms) = 0;
  /// Records when a job's first partition went to a worker (Unix ms; kept if
  /// already set). Throws JournalError.
  virtual void set_started(uint64_t job, int64_t started_ms) = 0;
  /// The stored proof of (job, partition), if any. Throws JournalError on a read fault.
  virtual std::optional<JournaledProof> proof(uint64_t job, uint32_t index) = 0;
  /// Deletes jobs that finished before `cutoff_ms` (Unix ms) with their
  /// partitions and proofs; returns how many jobs went. Throws JournalError.
  virtual size_t prune(int64_t cutoff_ms) = 0;

  /// Adds or replaces a registered circuit (by name). Throws JournalError.
  virtual void put_circuit(const CircuitRecord& c) = 0;
  /// Removes circuit `name`; false when there was none. Throws JournalError.
  virtual bool remove_circuit(const std::string& name) = 0;
  /// Every registered circuit, by name. Throws JournalError.
  virtual std::vector<CircuitRecord> circuits() = 0;

  /// Whether a write commits now (a probe while writes are failing, every
  /// few seconds). Never throws; false records the fault in last_error().
  virtual bool writable() = 0;
  /// The message of the last fault of any call ("" once a write succeeds).
  virtual const std::string& last_error() const = 0;
  /// Why the record that guards acknowledged writes beyond the store itself
  /// could not be kept after the last one (the SQLite journal's acknowledged
  /// mark, acked_mark.hpp); "" when it was, or when the store needs none.
  virtual std::string acknowledgement_fault() const { return {}; }
};

}  // namespace zkfarm::supervisor
