#pragma once
// The journal: every accepted job, its partitions and their proofs, in SQLite
// (STATE/journal.sqlite, WAL mode, synchronous=FULL), so that nothing accepted
// is lost whatever happens to the supervisor (SIGKILL, power loss). A job is
// acknowledged to its client only after add_job() has committed. A partition's
// proof is journaled once: the (job, partition) primary key refuses a second.
//
// Faults are exceptions, never exits: every call that fails throws
// JournalError naming the file, the operation and SQLite's message, and leaves
// the Journal usable: no statement left running, no transaction left open (a
// failed write is rolled back whole), reads working if the disk can be read.
// writable() tells when writes work again (after a full disk, an I/O error).
//
// Open refuses a damaged journal (supervisor/wal_check.hpp for the WAL, PRAGMA
// quick_check for the main file) instead of letting SQLite drop what it
// cannot read.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "supervisor/ledger/acked_mark.hpp"
#include "supervisor/model/jobs.hpp"
#include "supervisor/ledger/journal_error.hpp"
#include "supervisor/ledger/ledger.hpp"
#include "supervisor/ledger/schema_migrations.hpp"
#include "sqlite/db.hpp"


namespace zkfarm::supervisor {

/// How the connection is set up, as SQLite reports it (for logs and tests).
struct JournalDurability {
  std::string journal_mode;  ///< "wal"
  int synchronous = 0;       ///< PRAGMA synchronous: 0 OFF, 1 NORMAL, 2 FULL, 3 EXTRA
};

struct JournalOptions {
  /// SQLite VFS to open the file with (sqlite3_open_v2's zVfs); empty: the
  /// default ("unix"). Tests register a fault-injecting one.
  std::string vfs;
};

/// The SQLite ledger (ledger.hpp) of a single-host farm.
class Journal : public Ledger {
 public:
  /// Opens the journal at `path`, creating it when absent. Before SQLite sees
  /// the files, `path`-wal is checked (check_wal); then the main file's
  /// identity (application_id, schema) and PRAGMA quick_check. Throws
  /// JournalError naming the file and the fault, and what the operator can do,
  /// when it is not a zkfarm journal (another SQLite file, one of a later
  /// schema), is damaged (a WAL frame that may hold an acknowledged
  /// transaction, a main file failing quick_check), holds fewer acknowledged
  /// transactions than `path`-acked records (acked_mark.hpp: a WAL cut or
  /// damaged after an acknowledged commit, a journal removed or restored from
  /// an older backup) or cannot be opened; such files are never modified. An existing journal opens even when its disk is
  /// full: reads work, writes throw until writable() is true.
  explicit Journal(const std::string& path, const JournalOptions& options = {});
  ~Journal();
  Journal(const Journal&) = delete;
  Journal& operator=(const Journal&) = delete;

  /// Inserts the job and its partitions (each with its public.json) in one
  /// transaction and returns the id it was given. Durable (fsynced) when this
  /// returns, and counted in the acknowledged mark (`path`-acked, fsynced
  /// too): the caller then tells the client. Throws JournalError; then nothing of the job is journaled (but
  /// see the report on an fsync that fails after the commit frame was written).
  uint64_t add_job(const Job& job) override;
  /// Journals the encoded proof of (job, partition) (groth16/proof_codec.hpp:
  /// 256 bytes for BN254, 384 for BLS12-381) and its stage times (ms);
  /// a non-empty public_json (a partition of circom inputs, whose public
  /// signals came with its witness) is stored with it as the partition's
  /// public.json. kDuplicate, changing nothing, if that partition already
  /// has a proof (the (job, partition) primary key); never kFenced (no claims
  /// on one host), never job_done (the supervisor ends a job of one host once
  /// its files are written). Throws JournalError (also when the partition
  /// does not exist); then nothing changed.
  CompleteResult complete(uint64_t job, uint32_t index, const ProofRecord& proof) override;
  std::vector<ProofStored> add_proofs(std::span<const ProofToStore> proofs) override;
  /// Adds or replaces a registered circuit (by name), counted in the
  /// acknowledged mark like add_job. Throws JournalError.
  void put_circuit(const CircuitRecord& c) override;
  /// Removes circuit `name`; false when there was none. Throws JournalError.
  bool remove_circuit(const std::string& name) override;
  /// Every registered circuit, by name. Read-only; throws JournalError.
  std::vector<CircuitRecord> circuits() override;
  /// Records a job's terminal state (done, failed, cancelled) and when it
  /// finished (wall-clock Unix ms). Throws JournalError; then nothing changed.
  void finish_job(uint64_t job, JobState state, const std::string& error, int64_t finished_ms) override;
  void record_deliveries(uint64_t job, std::span<const DeliveryTime> times) override;
  /// Records when a job's first partition went to a worker (Unix ms; kept if
  /// already set). Throws JournalError; then nothing changed.
  void set_started(uint64_t job, int64_t started_ms) override;
  /// Every journaled job, oldest first; a partition with a proof comes back
  /// done, every other one queued (what was in flight is proved again).
  /// Read-only: works on a full disk. Throws JournalError on a read fault.
  std::vector<Job> load() override;
  /// The journaled proof of (job, partition), if any. Read-only; throws
  /// JournalError on a read fault.
  std::optional<JournaledProof> proof(uint64_t job, uint32_t index) override;
  /// Deletes jobs that finished (done, failed, cancelled) before `cutoff_ms`
  /// (Unix ms), with their partitions and proofs, in one transaction. Returns
  /// how many jobs went. Cheap when nothing is due: an index on finished_ms,
  /// and a transaction that changes nothing writes nothing. Throws
  /// JournalError; then nothing was deleted.
  size_t prune(int64_t cutoff_ms) override;

  /// Whether a write commits now: runs the clean-up a failed write left
  /// pending (a TRUNCATE checkpoint of the WAL) and a real one-row write (the
  /// `meta` table's probe counter) in its own fsynced transaction. Never
  /// throws; false records the fault in last_error(). One fsync or more: call
  /// it while writes are failing (every few seconds), not per job.
  bool writable() override;
  /// Why the acknowledged mark (DB-acked) could not be written after the
  /// last acknowledged commit, "" when it was. An acknowledged transaction
  /// first rewrites the mark's current number (before its
  /// COMMIT): a mark that cannot be written fails the transaction, rolled
  /// back, as a storage fault (intake closes, writable() stays false until
  /// the mark takes a write). Only a fault in the moment between that
  /// probe and the new number's write leaves this set with the commit standing.
  std::string acknowledgement_fault() const override { return mark_fault_; }
  std::string take_acknowledgement_notice() override;
  /// The message of the last fault of any call ("" once a write succeeds).
  const std::string& last_error() const override { return last_error_; }
  const char* kind() const override { return "sqlite"; }

  std::string where() const override { return path_; }
  /// The connection's journal mode and synchronous level, read from SQLite.
  JournalDurability durability();
  /// Caps the main file at `pages` pages (PRAGMA max_page_count; SQLite keeps
  /// at least the current size), so that writes needing more fail with
  /// SQLITE_FULL like a full disk; 0 lifts the cap. For tests, and for an
  /// operator's size limit. Throws JournalError.
  void set_max_pages(int64_t pages);

  const std::string& path() const { return path_; }

 private:
  /// Whether a transaction's success is told to a client (then it counts in
  /// the acknowledged mark, acked_mark.hpp) or only used inside zkfarmd.
  enum class Told { kNobody, kClient };
  // The write path (journal.cpp says why each step is there).
  void transact(const char* op, const std::function<void(const std::string& where)>& body,
                Told told = Told::kNobody);
  void mark_acknowledged(uint64_t seq);
  std::string write_mark(uint64_t seq, bool sync = true);
  void statement(const char* op, const std::function<void(const std::string& where)>& body);
  void prepare_write(const std::string& where);
  int read_schema_version(const std::string& where);
  void apply_migration(const SchemaMigration& m, const std::string& where);
  void after_failed_write();
  void after_commit();
  void truncate_wal(int busy_ms, const std::string& where);
  static int on_wal_commit(void* self, sqlite3* db, const char* name, int frames);

  std::string path_;
  sqlite::Db db_;
  bool wal_dirty_ = true;        ///< the WAL may hold bytes past its last commit: truncate before writing
  int schema_version_ = 0;       ///< the last migration applied (journal_schema.hpp)
  int wal_frames_ = 0;           ///< frames in the WAL after the last commit (SQLite's WAL hook)
  int checkpoint_at_ = 1000;     ///< wal_frames_ at which a commit is followed by a TRUNCATE checkpoint
  int64_t default_max_pages_ = 0;  ///< PRAGMA max_page_count at open (set_max_pages(0) restores it)
  std::string last_error_;
  std::unique_ptr<AckedMark> mark_;  ///< DB-acked, opened at the first acknowledged commit
  std::string mark_fault_;           ///< why the last mark write failed ("" when it worked)
  std::optional<uint64_t> remake_mark_at_;  ///< set by the open: the mark to write once the journal is open
  std::string mark_notice_;          ///< what the mark's writes repaired, for take_acknowledgement_notice
};

}  // namespace zkfarm::supervisor
