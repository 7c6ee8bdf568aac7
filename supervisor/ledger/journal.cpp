#include "supervisor/ledger/journal.hpp"

#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>

#include <algorithm>
#include <map>
#include <utility>

#include "supervisor/ledger/acked_mark.hpp"
#include "supervisor/ledger/wal_check.hpp"
#include "supervisor/ledger/journal_schema.hpp"
#include "sql/journal.sql.hpp"

namespace zkfarm::supervisor {

namespace {

// PRAGMA application_id marks the file as ours; the schema is numbered
// migrations (journal_schema.hpp), user_version its min_reader.
constexpr int kApplicationId = 0x7a6b6672;  // "zkfr"

constexpr int kBusyMs = 5000;  // another connection holding the write lock (an operator's sqlite3)
// A TRUNCATE checkpoint waits this long for readers of an older snapshot
// before it gives up; the event loop is blocked meanwhile.
constexpr int kTruncateBusyMs = 200;
// WAL frames after which a commit is followed by a TRUNCATE checkpoint
// (SQLite's own autocheckpoint default is 1000 frames, ~4 MiB).
constexpr int kCheckpointFrames = 1000;

using sqlite::Stmt;

// The journal's faults are JournalError (sqlite/db.hpp's Thrower).
[[noreturn]] void throw_journal_error(const std::string& what, int code) { throw JournalError(what, code); }

int64_t pragma_int(const sqlite::Db& db, const char* name, const std::string& where) {
  Stmt s(db, (std::string("PRAGMA ") + name).c_str(), where);
  return s.step() ? s.i64(0) : 0;
}

// Whether the journal has table `name` (an older one may lack one).
bool has_table(const sqlite::Db& db, const std::string& name, const std::string& where) {
  Stmt s(db, sql::journal::has_table, where);
  s.bind(1, name);
  return s.step() && s.i64(0) > 0;
}

JobState job_state_from(const std::string& s) {
  if (s == "done") return JobState::kDone;
  if (s == "failed") return JobState::kFailed;
  if (s == "cancelled") return JobState::kCancelled;
  return JobState::kQueued;
}

// The refusal of a WAL with a damaged frame: what, where, and the way out.
std::string damaged_wal_message(const std::string& db, const std::string& wal, const WalDamage& d) {
  const std::string aside = "move the WAL aside (mv " + wal + " " + wal + ".damaged: the journal then starts with what " +
                            db + " holds)";
  if (d.frame == 0)
    return wal + ": the header is damaged: " + d.fault +
           ". SQLite would silently ignore the whole WAL, and with it every job acknowledged since the last "
           "checkpoint, so zkfarmd will not open the journal. To start anyway: stop zkfarmd and " + aside +
           "; the jobs acknowledged since the last checkpoint may then be lost: compare with what clients were "
           "told and resubmit them.";
  const std::string off = std::to_string(d.offset);
  return wal + ": frame " + std::to_string(d.frame) + " (at byte " + off + ") is damaged: " + d.fault +
         ". It may hold jobs that were acknowledged, and SQLite would silently drop it and every frame after it, so "
         "zkfarmd will not open the journal. To start anyway: stop zkfarmd, then either cut the WAL before the "
         "damaged frame, keeping a copy (cp " + wal + " " + wal + ".damaged && truncate -s " + off + " " + wal +
         ": every transaction committed before the frame stays), or " + aside +
         ". Jobs acknowledged from the damaged frame's transaction on (cut) or since the last checkpoint (move) may "
         "then be lost: compare with what clients were told and resubmit them (if they were, the next start says so "
         "and names " + db + "-acked, which you then move aside too).";
}

// What the WAL looks like at its end, for the refusal below: the usual trace
// of a cut (a partial frame, frames after the last commit) or nothing.
std::string wal_tail(const std::string& wal_path, const WalReport& w) {
  if (!w.exists) return wal_path + " does not exist";
  if (w.torn_bytes > 0)
    return wal_path + " ends with " + std::to_string(w.torn_bytes) + " bytes of a partial frame after " +
           std::to_string(w.commits) + " complete commits";
  if (w.uncommitted_frames > 0)
    return wal_path + " ends with " + std::to_string(w.uncommitted_frames) + " frames after its last commit";
  if (w.leftover_frames > 0)
    return wal_path + " ends with " + std::to_string(w.leftover_frames) +
           " frames whose salts are not the header's (overwritten or damaged headers)";
  return wal_path + " holds " + std::to_string(w.commits) + " complete commits and nothing after them";
}

// The refusal of a journal behind its acknowledged mark (acked_mark.hpp).
std::string lost_acknowledged_message(const std::string& db, const WalReport& w, uint64_t held, uint64_t acked,
                                      bool journal_exists) {
  const std::string mark = db + "-acked";
  const std::string missing = std::to_string(acked - held);
  return db + ": " + missing + " acknowledged transaction" + (acked - held == 1 ? "" : "s") +
         " (submitted jobs, added circuits) missing: " + mark + " records " + std::to_string(acked) +
         " acknowledged, the journal holds " + std::to_string(held) + ". " +
         (journal_exists ? "The WAL was cut or damaged after they were committed (" + wal_tail(db + "-wal", w) +
                               "): SQLite would silently start without them, "
                         : db + " is missing or empty, ") +
         "so zkfarmd will not open the journal. If a backup holds them, restore it (" + db + " and its -wal). To "
         "start anyway: stop zkfarmd, keep a copy (cp -a " + db + "* a safe place), then move the mark aside (mv " +
         mark + " " + mark + ".lost): the journal starts with what it holds, and the missing jobs are lost: compare "
         "with what clients were told (zkfarmctl jobs) and resubmit them.";
}

// The refusal of a journal whose mark is missing or damaged (acked_mark.hpp)
// when the journal cannot prove nothing acknowledged is missing.
std::string unproven_mark_message(const std::string& db, const WalReport& w, uint64_t held, bool exists) {
  const std::string mark = db + "-acked";
  return mark + (exists ? ": the acknowledged mark is damaged (neither of its slots is valid)"
                        : ": the acknowledged mark is missing") +
         ", and the journal holds " + std::to_string(held) + " acknowledged transactions (" + wal_tail(db + "-wal", w) +
         "): nothing tells whether acknowledged jobs were lost with it (a WAL cut after a crash drops them "
         "silently), so zkfarmd will not open the journal. If a backup holds the mark or the journal, restore it. "
         "To start with what the journal holds: stop zkfarmd, keep a copy (cp -a " + db + "* a safe place), then " +
         (exists ? "move the mark aside (mv " + mark + " " + mark + ".lost)"
                 : "say so (touch " + mark + ".lost)") +
         ": zkfarmd starts with a new mark; compare its jobs (zkfarmctl jobs) with what clients were told and "
         "resubmit any missing.";
}

}  // namespace

Journal::Journal(const std::string& path, const JournalOptions& options) : path_(path) {
  const std::string where = path + ": open";
  // Before SQLite reads the WAL: its recovery would drop a damaged frame silently.
  const WalReport wal = check_wal(path + "-wal");
  if (wal.damage) throw JournalError(damaged_wal_message(path, path + "-wal", *wal.damage));
  // What was acknowledged, from outside SQLite's files (acked_mark.hpp): read
  // now, compared once SQLite has replayed what it could of the WAL.
  const AckedMarkRead mark = read_acked_mark(path + "-acked");

  const bool existed = ::access(path.c_str(), F_OK) == 0;
  if (existed && ::access(path.c_str(), R_OK | W_OK) != 0)
    throw JournalError(path + ": journal is not readable and writable by this user");
  db_ = sqlite::Db(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX, options.vfs, kBusyMs,
                   &throw_journal_error, "cannot open the journal");
  // Replaces SQLite's autocheckpoint (a PASSIVE checkpoint that leaves the WAL
  // to be overwritten from its start): after_commit() truncates it instead.
  sqlite3_wal_hook(db_.get(), &Journal::on_wal_commit, this);
  try {
    // Read before writing anything: a file that is not ours is left untouched.
    int64_t app = 0, min_reader = 0, n_tables = 0;
    try {
      app = pragma_int(db_, "application_id", where);
      min_reader = pragma_int(db_, "user_version", where);
      Stmt tables(db_, sql::journal::count_objects, where);  // finalized before any write
      tables.step();
      n_tables = tables.i64(0);
      // Only in a file that is ours: anyone's schema_migrations table is not (refused below).
      schema_version_ = n_tables > 0 && app == kApplicationId ? read_schema_version(where) : 0;
    } catch (const JournalError& e) {
      const int code = e.sqlite_code() & 0xff;
      const std::string what = e.what();  // "WHERE: SQLite's message (CODE)"
      if (code == SQLITE_NOTADB || code == SQLITE_CORRUPT)
        throw JournalError(path + ": journal is corrupt or not a database (" + what.substr(where.size() + 2) +
                               "); refusing to touch it. Stop zkfarmd, move " + path +
                               " and its -wal and -shm files aside, and restore a backup or start with an empty "
                               "journal (its unfinished jobs are then lost: resubmit them)",
                           e.sqlite_code());
      throw;
    }
    if (n_tables > 0 && app != kApplicationId)
      throw JournalError(path + ": not a zkfarm journal (another SQLite database); refusing to touch it");
    // Before anything is written (a checkpoint would fold the WAL into the
    // main file and lose the evidence): is every acknowledged transaction here?
    int64_t held = 0;
    if (n_tables > 0) {
      if (has_table(db_, "acknowledged", where)) {
        Stmt seq(db_, sql::journal::acknowledged_seq, where);
        held = seq.step() ? seq.i64(0) : 0;
      }
    }
    if (mark.seq) {
      if (uint64_t(held) < *mark.seq)
        throw JournalError(lost_acknowledged_message(path, wal, uint64_t(held), *mark.seq, existed && n_tables > 0));
    } else if (existed && n_tables > 0) {
      // No mark, or none of its slots valid: nothing says what was
      // acknowledged. Only a journal that never acknowledged anything and
      // whose WAL ends cleanly proves nothing is missing; otherwise the
      // operator says so by setting the mark aside (DB-acked.lost).
      const bool wal_clean = !wal.exists || (wal.torn_bytes == 0 && wal.uncommitted_frames == 0 &&
                                             wal.leftover_frames == 0);
      const std::string aside = path + "-acked.lost";
      struct stat st{};
      const bool set_aside = ::lstat(aside.c_str(), &st) == 0;
      if (!(held == 0 && wal_clean) && !set_aside)
        throw JournalError(unproven_mark_message(path, wal, uint64_t(held), mark.exists));
      remake_mark_at_ = uint64_t(held);
      if (set_aside) {
        // Used once: a later loss is not accepted by the same file.
        const std::string kept = aside + "." + std::to_string(::time(nullptr));
        ::rename(aside.c_str(), kept.c_str());
        mark_notice_ = path + "-acked " + (mark.exists ? "was damaged" : "was missing") +
                       " and the operator set it aside (" + kept + "): the journal starts with the " +
                       std::to_string(held) + " acknowledged transactions it holds, and a new mark";
      }
    }
    if (app == kApplicationId) {
      const std::string verdict =
          schema_verdict("the journal", kJournalSchemaVersion, schema_version_, int(min_reader));
      if (!verdict.empty()) throw JournalError(path + ": " + verdict);
    }
    {
      Stmt mode(db_, "PRAGMA journal_mode=WAL", where);
      if (!mode.step() || mode.text(0) != "wal")
        throw JournalError(path + ": cannot put the journal in WAL mode (SQLite kept \"" + mode.text(0) + "\")");
    }
    // FULL: a WAL commit is fsynced before COMMIT returns (NORMAL syncs only at
    // checkpoints, so a power loss could undo an acknowledged job).
    db_.exec("PRAGMA synchronous=FULL", where);
    db_.exec("PRAGMA foreign_keys=ON", where);
    // When SQLite does restart the WAL from its start (a checkpoint that a
    // reader kept from truncating), the first commit after cuts the file to
    // its end: no older frames stay behind it for a kill to leave half
    // overwritten.
    db_.exec("PRAGMA journal_size_limit=0", where);
    default_max_pages_ = pragma_int(db_, "max_page_count", where);
    if (n_tables == 0) {  // a new journal: every migration in one transaction, or none
      db_.exec("BEGIN IMMEDIATE", where);
      db_.exec(("PRAGMA application_id=" + std::to_string(kApplicationId)).c_str(), where);
      for (const SchemaMigration& m : journal_migrations()) apply_migration(m, where);
      db_.exec("COMMIT", where);
    }
    {
      Stmt check(db_, "PRAGMA quick_check", where);
      const std::string result = check.step() ? check.text(0) : std::string("no answer");
      if (result != "ok") {
        const std::string first = result.substr(0, std::min(result.find('\n'), size_t(200)));
        throw JournalError(path + ": journal is corrupt (quick_check: " + first +
                           "); zkfarmd will not open it. Stop zkfarmd, keep a copy of " + path +
                           "*, then restore a backup, or move the three files aside to start with an empty journal "
                           "(its unfinished jobs are then lost: resubmit them); `sqlite3 " + path +
                           " .recover` may salvage rows");
      }
    }
  } catch (...) {
    // A refused journal stays as it was: the last connection's close would
    // otherwise checkpoint the WAL into the main file and delete it, folding
    // away the evidence (and what a restore needs).
    db_.close(/*keep_wal=*/true);
    throw;
  }
  // Clear what a killed predecessor left in the WAL and run the migrations
  // the journal lacks. On a full disk this fails, the journal still opens for reads, and
  // the next write tries again (prepare_write).
  try {
    prepare_write(where);
  } catch (const JournalError& e) {
    last_error_ = e.what();
  }
  // A mark set aside (or a journal that proved whole without one): a new one now.
  if (remake_mark_at_) {
    if (::unlink((path + "-acked").c_str()) != 0 && errno != ENOENT) {
      mark_fault_ = path + "-acked: cannot remove the damaged mark: " + std::strerror(errno);
    } else {
      mark_fault_ = write_mark(*remake_mark_at_);
    }
    remake_mark_at_.reset();
  }
}

Journal::~Journal() {
  db_.close();  // checkpoints and removes the WAL when it can
}

int Journal::on_wal_commit(void* self, sqlite3*, const char*, int frames) {
  static_cast<Journal*>(self)->wal_frames_ = frames;
  return SQLITE_OK;  // anything else would turn the committed transaction into an error
}

// Checkpoints every frame into the main file, syncs it, and cuts the WAL to 0
// bytes (SQLITE_CHECKPOINT_TRUNCATE). Throws JournalError when it cannot (a
// full disk, an I/O error, a reader of an older snapshot for `busy_ms`).
void Journal::truncate_wal(int busy_ms, const std::string& where) {
  db_.busy_timeout(busy_ms);
  const int rc = sqlite3_wal_checkpoint_v2(db_.get(), nullptr, SQLITE_CHECKPOINT_TRUNCATE, nullptr, nullptr);
  if (rc != SQLITE_OK) {
    const std::string msg = sqlite3_errmsg(db_.get());
    db_.busy_timeout(kBusyMs);
    throw JournalError(where + ": cannot checkpoint and truncate the WAL: " + msg + " (" + sqlite::code_name(rc) + ")", rc);
  }
  db_.busy_timeout(kBusyMs);
  wal_frames_ = 0;
}

// Why the WAL must be empty before a write after a fault: SQLite appends the
// next transaction after the last commit, over whatever a failed or killed
// write left there, with the same salts. A kill between a frame's header and
// its page would then leave a complete frame with matching salts and a bad
// checksum, which check_wal (rightly, as far as the bytes tell) refuses.
// Writing only into an empty or append-only WAL keeps a kill's leftovers a
// trailing partial frame.
void Journal::prepare_write(const std::string& where) {
  if (!db_.autocommit()) {  // a transaction a failed ROLLBACK left open
    db_.exec_quietly("ROLLBACK");
    if (!db_.autocommit())
      throw JournalError(where + ": a failed transaction cannot be rolled back: " + sqlite3_errmsg(db_.get()),
                         sqlite3_extended_errcode(db_.get()));
  }
  if (wal_dirty_) {
    truncate_wal(kTruncateBusyMs, where);
    wal_dirty_ = false;
  }
  for (const SchemaMigration& m : journal_migrations()) {
    if (m.version <= schema_version_) continue;
    try {
      db_.exec("BEGIN IMMEDIATE", where);
      apply_migration(m, where);
      db_.exec("COMMIT", where);
    } catch (...) {
      schema_version_ = m.version - 1;  // the rolled-back one runs again at the next write
      after_failed_write();
      throw;
    }
  }
}

// The last migration applied: schema_migrations' newest row, or 1 for a
// journal of zkfarmd before numbered migrations (no such table).
int Journal::read_schema_version(const std::string& where) {
  if (!has_table(db_, "schema_migrations", where)) return 1;
  Stmt v(db_, sql::journal::schema_version, where);
  return v.step() ? int(v.i64(0)) : 1;
}

// Migration m's SQL, its row in schema_migrations and its min_reader in
// user_version, inside the caller's transaction.
void Journal::apply_migration(const SchemaMigration& m, const std::string& where) {
  db_.exec(m.sql, where);
  db_.exec(sql::journal::create_schema_migrations, where);
  Stmt rec(db_, sql::journal::record_migration, where);
  rec.bind(1, int64_t(m.version)).bind(2, int64_t(m.min_reader)).bind(3, int64_t(::time(nullptr)) * 1000);
  rec.run();
  // Never lowered: a min_reader that a newer zkfarmd raised stays the
  // older ones' refusal.
  const int64_t min_reader = std::max<int64_t>(m.min_reader, pragma_int(db_, "user_version", where));
  db_.exec(("PRAGMA user_version=" + std::to_string(min_reader)).c_str(), where);
  schema_version_ = m.version;
}

void Journal::after_failed_write() {
  if (!db_.autocommit()) db_.exec_quietly("ROLLBACK");
  wal_dirty_ = true;
}

void Journal::after_commit() {
  if (wal_frames_ < checkpoint_at_) return;
  try {
    truncate_wal(0, path_);  // never waits: a reader makes it a PASSIVE checkpoint, retried 1000 frames later
    checkpoint_at_ = kCheckpointFrames;
  } catch (const JournalError&) {
    checkpoint_at_ = wal_frames_ + kCheckpointFrames;
  }
}

void Journal::transact(const char* op, const std::function<void(const std::string& where)>& body, Told told) {
  const std::string where = path_ + ": " + op;
  int64_t seq = 0;
  try {
    prepare_write(where);
    db_.exec("BEGIN IMMEDIATE", where);
    body(where);
    if (told == Told::kClient) {
      db_.exec(sql::journal::bump_acknowledged, where);
      {
        Stmt s(db_, sql::journal::acknowledged_seq, where);
        seq = s.step() ? s.i64(0) : 0;
      }
      // Before the COMMIT: the mark must take a write now (its current
      // number again; not synced: the bytes do not change, and the new
      // number's write after the COMMIT is), or nothing is acknowledged that
      // it would not cover: the transaction is rolled back as a storage fault.
      if (seq > 0)
        if (const std::string fault = write_mark(uint64_t(seq) - 1, /*sync=*/false); !fault.empty()) {
          mark_fault_ = fault;
          throw JournalError::of_store(where + ": " + fault, true);
        }
    }
    db_.exec("COMMIT", where);
  } catch (const JournalError& e) {
    last_error_ = e.what();
    after_failed_write();
    throw;
  } catch (...) {
    after_failed_write();
    throw;
  }
  last_error_.clear();
  if (wal_frames_ < checkpoint_at_ - kCheckpointFrames) checkpoint_at_ = kCheckpointFrames;  // SQLite restarted the WAL
  after_commit();
  // After the commit's fsync and before the caller tells anyone: a crash in
  // between leaves the mark one behind the journal, which the open accepts.
  if (seq > 0) mark_acknowledged(uint64_t(seq));
}

std::string Journal::write_mark(uint64_t seq, bool sync) {
  std::string fault;
  try {
    if (!mark_) mark_ = std::make_unique<AckedMark>(path_ + "-acked");
    fault = mark_->write(seq, sync);
    if (std::string n = mark_->take_notice(); !n.empty()) mark_notice_ += (mark_notice_.empty() ? "" : "; ") + n;
  } catch (const JournalError& e) {
    fault = e.what();
  }
  return fault;
}

void Journal::mark_acknowledged(uint64_t seq) { mark_fault_ = write_mark(seq); }

std::string Journal::take_acknowledgement_notice() { return std::exchange(mark_notice_, {}); }

void Journal::statement(const char* op, const std::function<void(const std::string& where)>& body) {
  const std::string where = path_ + ": " + op;
  try {
    if (!db_.autocommit()) db_.exec_quietly("ROLLBACK");
    body(where);
  } catch (const JournalError& e) {
    last_error_ = e.what();
    throw;
  }
}

uint64_t Journal::add_job(const Job& job) {
  uint64_t id = 0;
  transact("add_job", [&](const std::string& where) {
    Stmt ins(db_, sql::journal::insert_job, where);
    ins.bind(1, int64_t(job.priority)).bind(2, job.zkey).bind(3, job.out).bind(4, int64_t(job.slot_bytes));
    ins.bind(5, int64_t(job.n_public)).bind(6, job.submitted_ms);
    ins.step();
    id = uint64_t(db_.last_insert_rowid());
    Stmt m(db_, sql::journal::insert_job_meta, where);
    m.bind(1, int64_t(id)).bind(2, int64_t(job.owner_uid)).bind(3, int64_t(job.owner_gid));
    m.bind(4, job.zkey_source).bind(5, job.zkey_sha256);
    m.step();
    Stmt p(db_, sql::journal::insert_partition, where);
    for (uint32_t i = 0; i < job.parts.size(); ++i) {
      p.bind(1, int64_t(id)).bind(2, int64_t(i)).bind(3, job.parts[i].wtns).bind(4, job.parts[i].public_json);
      p.step();
      p.reset();
    }
    if (job.inputs()) {
      Stmt ji(db_, sql::journal::insert_job_inputs, where);
      ji.bind(1, int64_t(id)).bind(2, job.circuit).bind(3, job.generator);
      ji.step();
      Stmt pi(db_, sql::journal::insert_partition_input, where);
      for (uint32_t i = 0; i < job.parts.size(); ++i) {
        pi.bind(1, int64_t(id)).bind(2, int64_t(i)).bind(3, job.parts[i].input).bind(4, job.parts[i].input_source);
        pi.step();
        pi.reset();
      }
    }
  }, Told::kClient);
  return id;
}

CompleteResult Journal::complete(uint64_t job, uint32_t index, const ProofRecord& rec) {
  const ProofToStore one{job, index, rec};
  if (add_proofs({&one, 1}).front() == ProofStored::kStored) return {ProofStored::kStored, false, {}};
  return {ProofStored::kDuplicate, false, "a proof was already journaled"};
}

std::vector<ProofStored> Journal::add_proofs(std::span<const ProofToStore> proofs) {
  std::vector<ProofStored> out;
  transact("add_proof", [&](const std::string& where) {
    out.clear();  // a retried transaction starts over
    Stmt s(db_, sql::journal::insert_proof, where);
    Stmt u(db_, sql::journal::set_public_json, where);
    for (const ProofToStore& p : proofs) {
      const ProofRecord& rec = p.record;
      s.bind(1, int64_t(p.job)).bind(2, int64_t(p.index)).blob(3, rec.proof).bind(4, rec.proved_ms);
      s.bind(5, rec.synth_ms).bind(6, rec.prove_ms).bind(7, rec.queue_ms).bind(8, rec.verify_ms);
      s.step();
      s.reset();
      const bool added = db_.changes() == 1;
      out.push_back(added ? ProofStored::kStored : ProofStored::kDuplicate);
      if (added && !rec.public_json.empty()) {  // a partition of inputs: its public signals came with its witness
        u.bind(1, rec.public_json).bind(2, int64_t(p.job)).bind(3, int64_t(p.index));
        u.step();
        u.reset();
      }
    }
  });
  return out;
}

void Journal::put_circuit(const CircuitRecord& c) {
  transact("put_circuit", [&](const std::string& where) {
    Stmt s(db_, sql::journal::put_circuit, where);
    s.bind(1, c.name).bind(2, c.kind).bind(3, c.generator).bind(4, c.zkey_sha256).bind(5, c.zkey_source);
    s.bind(6, c.source).bind(7, int64_t(c.owner_uid)).bind(8, c.added_ms).bind(9, int64_t(c.n_vars));
    s.bind(10, int64_t(c.n_public));
    s.step();
    if (!c.inputs.empty()) {
      Stmt g(db_, sql::journal::put_generator_inputs, where);
      g.bind(1, c.generator).bind(2, c.inputs);
      g.step();
    }
    if (!c.graph_sha256.empty()) {
      Stmt g(db_, sql::journal::put_generator_graph, where);
      g.bind(1, c.generator).bind(2, c.graph_sha256);
      g.step();
    }
  }, Told::kClient);
}

bool Journal::remove_circuit(const std::string& name) {
  bool removed = false;
  transact("remove_circuit", [&](const std::string& where) {
    Stmt s(db_, sql::journal::remove_circuit, where);
    s.bind(1, name);
    s.step();
    removed = db_.changes() == 1;
    db_.exec(sql::journal::drop_unused_generator_inputs, where);
  });
  return removed;
}

std::vector<CircuitRecord> Journal::circuits() {
  std::vector<CircuitRecord> out;
  statement("circuits", [&](const std::string& where) {
    Stmt s(db_, sql::journal::circuits, where);
    while (s.step()) {
      out.push_back({s.text(0), s.text(1), s.text(2), s.text(3), s.text(4), s.text(5), uint32_t(s.i64(6)), s.i64(7),
                     uint32_t(s.i64(8)), uint32_t(s.i64(9))});
      out.back().inputs = s.text(10);
      out.back().graph_sha256 = s.text(11);
    }
  });
  return out;
}

void Journal::finish_job(uint64_t job, JobState state, const std::string& error, int64_t finished_ms) {
  transact("finish_job", [&](const std::string& where) {
    Stmt s(db_, sql::journal::finish_job, where);
    s.bind(1, std::string(job_state_name(state))).bind(2, error).bind(3, finished_ms).bind(4, int64_t(job));
    s.step();
  });
}

void Journal::record_deliveries(uint64_t job, std::span<const DeliveryTime> times) {
  if (times.empty()) return;
  transact("record_deliveries", [&](const std::string& where) {
    Stmt s(db_, sql::journal::set_delivery_ms, where);
    for (const DeliveryTime& t : times) {
      s.bind(1, t.ms).bind(2, int64_t(job)).bind(3, int64_t(t.index));
      s.step();
      s.reset();
    }
  });
}

void Journal::set_started(uint64_t job, int64_t started_ms) {
  transact("set_started", [&](const std::string& where) {
    Stmt s(db_, sql::journal::set_started, where);
    s.bind(1, started_ms).bind(2, int64_t(job));
    s.step();
  });
}

std::vector<Job> Journal::load() {
  std::vector<Job> out;
  statement("load", [&](const std::string& where) {
    std::map<uint64_t, Job> jobs;
    {
      Stmt s(db_, sql::journal::load_jobs, where);
      while (s.step()) {
        Job j;
        j.id = uint64_t(s.i64(0));
        j.priority = Priority(std::clamp<int64_t>(s.i64(1), 0, 3));
        j.zkey = s.text(2);
        j.out = s.text(3);
        j.slot_bytes = uint64_t(s.i64(4));
        j.n_public = uint32_t(s.i64(5));
        j.state = job_state_from(s.text(6));
        j.error = s.text(7);
        j.submitted_ms = s.i64(8);
        j.started_ms = s.i64(9);
        j.finished_ms = s.i64(10);
        j.owner_uid = uint32_t(s.i64(11));
        j.owner_gid = uint32_t(s.i64(12));
        j.zkey_source = s.text(13);
        j.zkey_sha256 = s.text(14);
        jobs.emplace(j.id, std::move(j));
      }
    }
    {
      Stmt s(db_, sql::journal::load_job_inputs, where);
      while (s.step()) {
        auto it = jobs.find(uint64_t(s.i64(0)));
        if (it == jobs.end()) continue;
        it->second.circuit = s.text(1);
        it->second.generator = s.text(2);
      }
    }
    Stmt s(db_, sql::journal::load_partitions, where);
    while (s.step()) {
      auto it = jobs.find(uint64_t(s.i64(0)));
      if (it == jobs.end()) continue;
      Partition p;
      p.index = uint32_t(s.i64(1));
      p.wtns = s.text(2);
      const bool proved = s.i64(3) != 0;
      p.synth_ms = s.i64(4);
      p.prove_ms = s.i64(5);
      p.public_json = s.text(6);
      p.input = s.text(7);
      p.input_source = s.text(8);
      Job& j = it->second;
      p.state = proved ? PartState::kDone
                : j.state == JobState::kFailed ? PartState::kFailed
                : j.state == JobState::kCancelled ? PartState::kCancelled
                                                  : PartState::kQueued;
      j.parts.push_back(p);
    }
    for (auto& [id, j] : jobs) {
      if (!j.terminal()) j.state = j.count(PartState::kDone) > 0 ? JobState::kRunning : JobState::kQueued;
      out.push_back(std::move(j));
    }
  });
  return out;
}

std::optional<JournaledProof> Journal::proof(uint64_t job, uint32_t index) {
  std::optional<JournaledProof> out;
  statement("proof", [&](const std::string& where) {
    Stmt s(db_, schema_version_ >= 3 ? sql::journal::proof : sql::journal::proof_before_3, where);
    s.bind(1, int64_t(job)).bind(2, int64_t(index));
    if (!s.step()) return;
    auto ms = [&s](int col) { return s.null(col) ? std::nullopt : std::optional<int64_t>(s.i64(col)); };
    out = JournaledProof{s.bytes(0), s.text(1), {ms(2), ms(3), ms(4), ms(5), ms(6)}};
  });
  return out;
}

size_t Journal::prune(int64_t cutoff_ms) {
  size_t n = 0;
  transact("prune", [&](const std::string& where) {
    // finished_ms > 0 AND finished_ms < ?: a range of the jobs_finished index.
    Stmt s(db_, sql::journal::prune, where);
    s.bind(1, cutoff_ms);
    s.step();
    n = size_t(db_.changes());
  });
  return n;
}

bool Journal::writable() {
  try {
    int64_t seq = 0;
    transact("write probe", [&](const std::string& where) {
      db_.exec(sql::journal::probe, where);
      if (has_table(db_, "acknowledged", where)) {
        Stmt s(db_, sql::journal::acknowledged_seq, where);
        seq = s.step() ? s.i64(0) : 0;
      }
    });
    // Writes commit; so must the acknowledged mark before intake reopens.
    if (!mark_fault_.empty()) {
      if (std::string fault = write_mark(uint64_t(seq)); !fault.empty()) {
        mark_fault_ = last_error_ = fault;
        return false;
      }
      mark_fault_.clear();
    }
    return true;
  } catch (const JournalError&) {
    return false;  // transact recorded it in last_error_
  } catch (const std::exception& e) {
    last_error_ = path_ + ": write probe: " + e.what();
    return false;
  }
}

JournalDurability Journal::durability() {
  JournalDurability d;
  statement("durability", [&](const std::string& where) {
    Stmt mode(db_, "PRAGMA journal_mode", where);
    if (mode.step()) d.journal_mode = mode.text(0);
    d.synchronous = int(pragma_int(db_, "synchronous", where));
  });
  return d;
}

void Journal::set_max_pages(int64_t pages) {
  statement("set_max_pages", [&](const std::string& where) {
    pragma_int(db_, ("max_page_count=" + std::to_string(pages > 0 ? pages : default_max_pages_)).c_str(), where);
  });
}

}  // namespace zkfarm::supervisor
