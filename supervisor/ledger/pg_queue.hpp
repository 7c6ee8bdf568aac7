#pragma once
// The PostgreSQL ledger (ledger.hpp): one queue that several zkfarmd hosts
// share (docs/cluster.md). Each host registers itself (host_id, heartbeat,
// version, devices); a partition is claimed into a lease (a fencing token
// from a sequence, an expiry in the database's clock) with
// SELECT … FOR UPDATE SKIP LOCKED, renewed while the host works on it; an
// expired lease puts the partition back in the queue (its attempts counted,
// max_attempts of them, then it fails with its last error); a proof is stored
// only while its lease is current, so a host presumed dead cannot add a
// second one, and each partition has exactly one proof (the proofs table's
// primary key says so too). Every change stamps a row with the next value of
// the writing transaction's id, so a host follows the queue by asking what changed since the
// last snapshot it saw (changes_since); NOTIFY zkfarm wakes idle hosts.
//
// The schema is versioned (pg_schema.hpp): a host migrates an older one under
// an advisory lock at start and refuses one whose readers must be newer.
// Maintenance (expired leases, retention) runs on the one host holding the
// maintenance turn (docs/cluster.md "Maintenance").
//
// Every statement is in sql/pg_queue.sql; the sources are pg_queue.cpp
// (connection, membership, the turn), pg_jobs.cpp (jobs, proofs, circuits,
// the change feed, status) and pg_leases.cpp (claims and leases).
//
// Through libpq (Debian's libpq-dev). One connection, used from one thread;
// it is made again after a fault, with backoff (reconnect_wait()). Every
// call throws JournalError naming the database (URL without its password),
// the operation and PostgreSQL's message; storage_fault() is true for
// connection faults (the server is restarting or unreachable), when the
// same call later may work.
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "supervisor/ledger/ledger.hpp"

struct pg_conn;

namespace zkfarm::supervisor {

struct PgOptions {
  std::string url;            ///< a libpq connection string or postgresql:// URI
  std::string host_id;        ///< this host's name in the queue (unique per zkfarmd)
  std::string version;        ///< zkfarmd's version (hosts table, status)
  std::string devices;        ///< what this host proves on ("cpu", "gpu 0,1"), for status
  unsigned lease_seconds = kDefaultLeaseSeconds;
  unsigned max_attempts = 3;  ///< claims of one partition before it fails
  /// Registers the host and releases the leases a previous run of this
  /// host_id left (its partitions go back at once, attempts kept). A
  /// benchmark's connections that only claim may leave it on.
  /// Which zkfarmd this is: machine id and state dir. A host_id whose row
  /// names another instance and has a fresh heartbeat is in use: refused.
  std::string instance;
  bool register_host = true;
};

class PgQueue : public Ledger, public SharedQueue {
 public:
  /// Connects, migrates the schema (pg_schema.hpp) and, with
  /// opt.register_host, registers this host. Throws JournalError (a
  /// database it cannot reach, a schema of a newer zkfarm).
  explicit PgQueue(PgOptions opt);
  ~PgQueue() override;
  PgQueue(const PgQueue&) = delete;
  PgQueue& operator=(const PgQueue&) = delete;

  const char* kind() const override { return "postgresql"; }
  SharedQueue* queue() override { return this; }
  std::string where() const override { return safe_url_; }

  /// Inserts the job and its partitions (queued; a job of inputs with each
  /// input.json's bytes, read from p.input) and NOTIFYs. p.wtns is stored
  /// relative to `shared_dir` (passed at construction through set_shared_dir).
  uint64_t add_job(const Job& job) override;
  void finish_job(uint64_t job, JobState state, const std::string& error, int64_t finished_ms) override;
  void set_started(uint64_t job, int64_t started_ms) override;
  std::optional<JournaledProof> proof(uint64_t job, uint32_t index) override;
  /// Deletes what finished before `cutoff_ms`, and hosts silent for a
  /// week, only while this host holds the maintenance turn (else 0).
  size_t prune(int64_t cutoff_ms) override;
  void put_circuit(const CircuitRecord& c) override;
  bool remove_circuit(const std::string& name) override;
  std::vector<CircuitRecord> circuits() override;
  bool writable() override;
  const std::string& last_error() const override { return last_error_; }
  /// None: a shared queue's jobs are mirrored through changes_since().
  std::vector<Job> load() override { return {}; }

  /// The shared dir (a folder every host mounts) that witness paths are relative to.
  void set_shared_dir(const std::string& dir) { shared_dir_ = dir; }

  // -- Claims and leases (docs/cluster.md).
  /// Claims up to `n` queued partitions (highest priority, oldest job, lowest
  /// index first; SKIP LOCKED, so hosts claiming at once never wait on each
  /// other) into leases of lease_seconds; their jobs become running.
  std::vector<ClaimedPartition> claim(unsigned n) override;
  /// Stores the proof of a leased partition if `proof.lease_token` is still
  /// its current, unexpired lease; the job is done with its last proof. The
  /// job's row is not touched otherwise (a hot row under many hosts): its
  /// progress is the sweep's.
  /// Committed without waiting for the server's disk flush
  /// (synchronous_commit off, as claims and renewals): a server crash may
  /// forget the last few, whose partitions are then proved again (never
  /// twice stored, never a job lost: add_job and job ends wait for the flush).
  CompleteResult complete(uint64_t job, uint32_t index, const ProofRecord& proof) override;
  /// Extends the leases of `tokens` this host holds and records a heartbeat
  /// with this host's `state`; returns the tokens still held (a lease that
  /// expired, was taken over or whose job ended is not renewed: the host
  /// drops that partition).
  std::vector<uint64_t> renew(const std::vector<uint64_t>& tokens, const std::string& state) override;
  /// Hands leases back at once (a drain or stop): queued again, the attempt
  /// not counted. Returns how many were released.
  size_t release(const std::vector<uint64_t>& tokens) override;
  /// Gives a lease back because its partition could not be made ready here
  /// (its shared file is missing or does not match its hash): queued again
  /// with `error` as its last error, the claim counted (max_attempts of
  /// them, then it fails with that error).
  bool give_back(uint64_t token, const std::string& error) override;
  /// The maintenance pass (docs/cluster.md "Maintenance"): takes or keeps
  /// the maintenance turn for lease_seconds, and only while this host holds
  /// it, returns expired leases to the queue, or fails them (and their job)
  /// once max_attempts claims were spent; so do queued partitions whose
  /// claims are spent (given back). Another host's turn not yet lapsed:
  /// nothing changes, 0. Returns how many partitions moved.
  size_t expire_leases() override;
  /// Brings the jobs' rows up to date with their partitions (proofs done,
  /// claims, stage times: what status shows) and ends a job whose every
  /// partition is done (two last proofs stored at once may both miss it),
  /// and stores the live partitions' counts by state for cluster().
  /// At most once a second over all hosts (a gate row in zkfarm_meta); true
  /// when this call did it (the gate reads the database's clock). `now_ms`:
  /// Unix ms, recorded as the finished time of the jobs it ends.
  bool sweep(int64_t now_ms) override;
  /// Fails a leased partition (a bad input, a proof that does not verify, a
  /// poison partition) and its job, if `token` is still its lease.
  bool fail_partition(uint64_t job, uint32_t index, uint64_t token, const std::string& error);
  /// Cancels a job that has not ended; false if it had (or does not exist).
  bool cancel_job(uint64_t job);
  /// Jobs whose rows were committed after `snapshot` (a pg_snapshot as text,
  /// "" for every job): every change is seen exactly once or superseded by a
  /// later one, however late its transaction committed.
  Changes changes_since(const std::string& snapshot) override;
  /// Registers this host (opt.host_id) as running and hands back at once
  /// the leases an earlier run of it left. Throws std::runtime_error when the
  /// host_id is held by another instance (opt.instance) whose heartbeat is
  /// younger than lease_seconds and that has not stopped.
  void register_host() override;
  /// The queue's id (zkfarm_meta 'queue_id'), made by the first host to ask;
  /// `created` says this call made it. Names the shared dir's marker.
  std::string queue_id(bool* created) override;
  /// Hosts (with the leases each holds now) and the queue's partition counts
  /// as of the last sweep (at most about a second old).
  ClusterView cluster() override;
  /// Marks this host stopped (a clean exit) and ends its maintenance turn,
  /// so that another host takes it at its next pass instead of a lease later.
  void deregister() override;
  /// The host holding the maintenance turn now ("" when it lapsed or none
  /// took it yet).
  std::string maintainer();
  /// The next time a reconnect may be tried (after a fault, with backoff
  /// from 250 ms doubling to 8 s); steady clock.
  std::chrono::steady_clock::time_point reconnect_after() const { return reconnect_after_; }
  /// Whether the last call reached the database.
  bool reachable() const { return reachable_; }

  const PgOptions& options() const { return opt_; }

 private:
  class Result;
  void open();  ///< the constructor's work: connect, migrate, register
  std::string relative(const std::string& path) const;  ///< a path under the shared dir, relative to it
  static std::string generator_name(const std::string& generator);  ///< a build's folder name (its source hash)
  void connect();
  void ensure_connected(const char* op);
  Result exec(const char* op, const std::string& sql, const std::vector<std::optional<std::string>>& params = {},
              const std::vector<bool>& binary = {});
  void fault(const char* op, const std::string& message, bool connection);

  PgOptions opt_;
  std::string safe_url_;
  std::string shared_dir_;
  pg_conn* conn_ = nullptr;
  bool reachable_ = false;
  std::chrono::milliseconds backoff_{250};
  std::chrono::steady_clock::time_point reconnect_after_{};
  std::string last_error_;
};

/// `url` with any password (password=… or user:PASS@) replaced by "***", for logs.
std::string redact_pg_url(const std::string& url);

}  // namespace zkfarm::supervisor
