#pragma once
// The ledger: the durable record of jobs, their partitions, the claims on
// them and their proofs, behind one interface with two implementations:
//   Journal (journal.hpp)    SQLite under the state dir: one host, the
//                            embedded default; every partition is this
//                            host's, so claims are implicit: claim() finds
//                            nothing, a renewal keeps every lease, and there
//                            is nothing to release or expire;
//   PgQueue (pg_queue.hpp)   PostgreSQL shared by several hosts: partitions
//                            are claimed into leases, and a proof is stored
//                            only under the current lease (fencing).
// A caller never asks which one it has: each call does what it means for its
// store. shared() says only what follows from several hosts sharing the
// record (a shared folder for the inputs, a mirror of the queue's jobs).
// The supervisor calls a ledger only from its ledger thread (background.hpp),
// in the order the loop posted the calls; none is thread-safe (shared(),
// queue() and kind() excepted: constant for the ledger's life).
//
// Faults are JournalError (journal_error.hpp) naming the store, the operation
// and the cause; storage_fault() says that retrying later may work (a full
// disk, a database that is restarting), so the write is kept and retried.
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "supervisor/model/jobs.hpp"
#include "supervisor/ledger/journal_error.hpp"
#include "supervisor/model/lease.hpp"

namespace zkfarm::supervisor {

/// A stored proof: the encoded proof (groth16/proof_codec.hpp; 256 or 384
/// bytes) and the text of public.json.
struct JournaledProof {
  std::string proof;
  std::string public_json;
  /// The stage times of the attempt that made it, as far as the store kept them.
  PartitionTiming timing;
};

/// A partition's delivery time (PartitionTiming::delivery_ms), kept when
/// its job ends done.
struct DeliveryTime {
  uint32_t index = 0;
  int64_t ms = 0;
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
  /// A shared queue: the witness graph's file as published beside them
  /// (SHARED/generators/SHA256, "" when the circuit has none) and its
  /// graph.slower text ("" when the graph is the faster engine).
  std::string graph_file_sha256, graph_slower;
  /// The circuit's input signals as its generator's --info lists them
  /// (witgen::signal_shapes_json), checked against every input at submit;
  /// "" when not known (a circuit added before zkfarmd asked for them).
  std::string inputs;
  /// The SHA-256 of the circuit's witness graph (STATE/circuits/HASH/graph)
  /// as built and checked at `circuit add`; "" when it has none (or was
  /// added before zkfarmd recorded it). A graph file of another hash is not used.
  std::string graph_sha256;
};

/// A proof to store: what add_proof records besides the partition.
struct ProofRecord {
  std::string proof;        ///< the encoded proof (256 or 384 bytes), verified before it gets here
  int64_t proved_ms = 0;    ///< Unix ms
  int64_t synth_ms = 0, prove_ms = 0;  ///< stage times of the attempt that made it
  int64_t queue_ms = 0, verify_ms = 0;  ///< …its waits and its verification (PartitionTiming)
  /// public.json of a partition of circom inputs (its public signals came
  /// with its witness); empty for a partition of witnesses (set at submit).
  std::string public_json;
  /// The claim it was proved under (PgQueue: the lease's fencing token); 0
  /// for a ledger without claims.
  uint64_t lease_token = 0;
};

/// One proof of a batch for add_proofs: the partition and its record.
struct ProofToStore {
  uint64_t job = 0;
  uint32_t index = 0;
  ProofRecord record;
};

/// What add_proof did.
enum class ProofStored {
  kStored,     ///< the partition's one proof, now durable
  kDuplicate,  ///< the partition already had a proof; that one is kept
  kFenced,     ///< the claim is no longer current (the lease expired or was
               ///< taken over, the job ended): nothing stored
};

/// A lease on a partition: whoever holds the token may store its proof until
/// the lease expires or is taken back.
struct Lease {
  uint64_t job = 0;
  uint32_t index = 0;
  uint64_t token = 0;     ///< the fencing token (a sequence value, never reused)
  uint32_t attempts = 0;  ///< claims of this partition so far, this one included
};

/// A partition claimed: its lease and what the host needs to prove it.
struct ClaimedPartition {
  Lease lease;
  std::string wtns;         ///< a job of witnesses: its copy, relative to the shared dir
  std::string wtns_sha256;  ///< …and that copy's SHA-256 (hex), checked before use
  std::string input;        ///< a job of inputs: input.json's bytes
  std::string input_name;   ///< …and the name the client gave it
};

/// One host as the hosts table has it.
struct HostRow {
  std::string host_id, version, devices, state;  ///< state: running, draining, stopping, stopped
  int64_t pid = 0;
  double heartbeat_age_s = 0;  ///< seconds since its last heartbeat, in the database's clock
  bool alive = false;          ///< a heartbeat within 3 leases' time
  uint64_t leases = 0;         ///< partitions it holds now
};

/// The queue as every host sees it (status).
struct ClusterView {
  std::vector<HostRow> hosts;
  uint64_t queued = 0, leased = 0, done = 0, failed = 0;  ///< partitions of live jobs, by state
  uint64_t live_jobs = 0;
  int schema = 0;
};

/// A job's row as changes_since reports it: the header fields of a Job
/// (parts sized k, each kElsewhere; shared progress in shared_*).
struct JobRow {
  Job job;
  std::string submitted_host;
};

/// Jobs whose rows changed between two snapshots of the database.
struct Changes {
  std::vector<JobRow> jobs;
  std::string snapshot;  ///< the cursor to pass next time ("": nothing to follow)
};

/// What a store of a proof did to its partition and its job.
struct CompleteResult {
  ProofStored stored = ProofStored::kFenced;
  bool job_done = false;  ///< this was the job's last proof (a shared queue ends it itself)
  std::string why;        ///< for kFenced and kDuplicate: what the ledger says of the partition now
};

class SharedQueue;

/// The durable record of jobs, partitions, proofs and circuits: the SQLite
/// journal of one host (journal.hpp) or the PostgreSQL queue several share
/// (pg_queue.hpp), which is also a SharedQueue.
class Ledger {
 public:
  virtual ~Ledger() = default;
  /// "sqlite" or "postgresql" (status, logs).
  virtual const char* kind() const = 0;
  /// Whether several hosts share this record (docs/cluster.md): inputs then
  /// live in the shared folder, the jobs are followed through changes_since()
  /// rather than load(), and partitions are proved under leases. The same
  /// fact as queue() being there, so it is read from it.
  bool shared() { return queue() != nullptr; }
  /// Where it is, for messages (a file, or a database URL without its password).
  virtual std::string where() const = 0;

  /// Inserts the job and its partitions in one transaction and returns the
  /// id it was given. Durable when this returns; throws JournalError, then
  /// nothing of the job is stored.
  virtual uint64_t add_job(const Job& job) = 0;
  /// Stores the proof of (job, partition) under proof.lease_token (the
  /// journal has no claims: its one proof is kept, a second is kDuplicate; the
  /// queue stores it only while that lease is current, else kFenced, and ends
  /// the job with its last proof). A partition that does not exist: the
  /// journal throws JournalError, the queue fences the proof (kFenced, `why`:
  /// its job is no longer in the queue, as for a job pruned meanwhile).
  /// Throws JournalError on a fault; then nothing changed.
  virtual CompleteResult complete(uint64_t job, uint32_t index, const ProofRecord& proof) = 0;
  /// complete(), for a caller that needs only what happened to the proof.
  ProofStored add_proof(uint64_t job, uint32_t index, const ProofRecord& proof) {
    return complete(job, index, proof).stored;
  }
  /// add_proof for each of `proofs`, in order; what happened to each, in
  /// order. The SQLite journal stores them in one transaction (one fsync for
  /// all: many small proofs arriving together, issue 36); the same outcome
  /// per proof as one add_proof each (a second proof of a partition is
  /// kDuplicate, the batch's first kept). Throws JournalError; then nothing
  /// of the batch is stored (the default: what came before the failing proof
  /// is). Proofs of a shared queue are stored one by one under their leases
  /// (cluster_mirror), never through here.
  virtual std::vector<ProofStored> add_proofs(std::span<const ProofToStore> proofs) {
    std::vector<ProofStored> out;
    for (const ProofToStore& p : proofs) out.push_back(add_proof(p.job, p.index, p.record));
    return out;
  }
  /// Records a job's terminal state (done, failed, cancelled) and when it
  /// finished (Unix ms). Throws JournalError; then nothing changed.
  virtual void finish_job(uint64_t job, JobState state, const std::string& error, int64_t finished_ms) = 0;
  /// Keeps the delivery times of a job zkfarmd delivered, beside its proofs
  /// (`result` after a restart shows them). A shared queue's jobs are
  /// delivered by their clients, so its store keeps none (this default).
  /// Throws JournalError.
  virtual void record_deliveries(uint64_t job, std::span<const DeliveryTime> times) {
    (void)job;
    (void)times;
  }
  /// Records when a job's first partition went to a worker (Unix ms; kept if
  /// already set). Throws JournalError.
  virtual void set_started(uint64_t job, int64_t started_ms) = 0;
  /// The stored proof of (job, partition), if any. Throws JournalError on a read fault.
  virtual std::optional<JournaledProof> proof(uint64_t job, uint32_t index) = 0;
  /// Deletes jobs that finished before `cutoff_ms` (Unix ms) with their
  /// partitions and proofs; returns how many jobs went. On a shared queue
  /// retention is maintenance: only the host holding the maintenance turn
  /// deletes (see expire_leases), every other returns 0. Throws JournalError.
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
  /// What the store repaired of that record since the last call (a mark
  /// removed while zkfarmd ran, made anew), "" when nothing: for the log.
  virtual std::string take_acknowledgement_notice() { return {}; }

  // -- The jobs at start, and this host's membership.
  /// Every job the ledger keeps for this host to resume, oldest first: a
  /// partition with a proof comes back done, every other one queued. A
  /// shared queue returns none (its jobs are mirrored by changes_since()).
  /// Read-only; throws JournalError on a read fault.
  virtual std::vector<Job> load() = 0;
  /// The shared queue's part of this ledger (claims, leases, hosts), or
  /// null for a record of one host, which has none of it.
  virtual SharedQueue* queue() { return nullptr; }
};

/// What several hosts sharing one ledger do beyond keeping the record
/// (docs/cluster.md): the queue's identity and membership, claims of
/// partitions into leases with fencing tokens, and following the jobs other
/// hosts change. On one host every partition is this host's from its submit
/// on, so a ledger of one host has no SharedQueue at all (Ledger::queue()
/// is null) rather than functions that do nothing. Calls run on the journal
/// thread, as the Ledger's do.
class SharedQueue {
 public:
  virtual ~SharedQueue() = default;
  /// The id of the queue that names the shared folder's marker, made by the
  /// first host to ask (`created`: this call made it). Throws JournalError.
  virtual std::string queue_id(bool* created) = 0;
  /// Records this host as running (and hands back what an earlier run of it
  /// held). Throws std::runtime_error when another live
  /// host has this host's name, JournalError on a fault.
  virtual void register_host() = 0;
  /// Records a clean stop of this host (and gives up its maintenance turn). Throws JournalError.
  virtual void deregister() = 0;

  // -- Claims and leases.
  /// Claims up to `n` queued partitions into leases of lease_seconds.
  virtual std::vector<ClaimedPartition> claim(unsigned n) = 0;
  /// Extends the leases of `tokens` and records this host's heartbeat and
  /// `state`; returns the tokens still held (one that expired, was taken
  /// over or whose job ended is not renewed: the host drops that partition).
  virtual std::vector<uint64_t> renew(const std::vector<uint64_t>& tokens, const std::string& state) = 0;
  /// Hands leases back at once (a drain, a stop, a claim this host cannot
  /// take): queued again, the attempt not counted. Returns how many went back.
  virtual size_t release(const std::vector<uint64_t>& tokens) = 0;
  /// Gives a lease back because its partition could not be made ready here
  /// (a shared file missing or changed): queued again with `error`, the claim
  /// counted (max_attempts of them, then it fails with that error).
  virtual bool give_back(uint64_t token, const std::string& error) = 0;
  /// The maintenance pass that one host runs for all (docs/cluster.md
  /// "Maintenance"): expired leases go back to the queue, or fail once their
  /// claims are spent. Only the host holding the maintenance turn does it;
  /// every other returns 0 having changed nothing. Returns how many
  /// partitions moved.
  virtual size_t expire_leases() = 0;
  /// Brings the job rows up to date with their partitions (at most once a
  /// second over all hosts); true when this call did it. `now_ms`: Unix ms.
  virtual bool sweep(int64_t now_ms) = 0;
  /// Jobs whose rows changed since `snapshot` ("" for every job), and the
  /// snapshot to pass next time.
  virtual Changes changes_since(const std::string& snapshot) = 0;
  /// Hosts and partition counts for status.
  virtual ClusterView cluster() = 0;
};

}  // namespace zkfarm::supervisor
