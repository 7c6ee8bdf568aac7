#include "supervisor/journal.hpp"

#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <map>

namespace zkfarm::supervisor {

namespace {

// PRAGMA application_id marks the file as ours; user_version is the schema.
constexpr int kApplicationId = 0x7a6b6672;  // "zkfr"
constexpr int kSchemaVersion = 1;

constexpr const char* kSchema = R"sql(
CREATE TABLE jobs (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  priority INTEGER NOT NULL,
  zkey TEXT NOT NULL,
  out TEXT NOT NULL,
  slot_bytes INTEGER NOT NULL,
  n_public INTEGER NOT NULL,
  state TEXT NOT NULL,
  error TEXT NOT NULL DEFAULT '',
  submitted_ms INTEGER NOT NULL,
  started_ms INTEGER NOT NULL DEFAULT 0,
  finished_ms INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE partitions (
  job INTEGER NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
  idx INTEGER NOT NULL,
  wtns TEXT NOT NULL,
  public_json TEXT NOT NULL,
  PRIMARY KEY (job, idx)
);
CREATE TABLE proofs (
  job INTEGER NOT NULL,
  idx INTEGER NOT NULL,
  proof BLOB NOT NULL,
  proved_ms INTEGER NOT NULL,
  synth_ms INTEGER NOT NULL,
  prove_ms INTEGER NOT NULL,
  PRIMARY KEY (job, idx),
  FOREIGN KEY (job, idx) REFERENCES partitions(job, idx) ON DELETE CASCADE
);
)sql";

// A prepared statement, finalized on scope exit.
class Stmt {
 public:
  Stmt(sqlite3* db, const char* sql, const std::string& path) : db_(db) {
    if (sqlite3_prepare_v2(db, sql, -1, &s_, nullptr) != SQLITE_OK)
      throw JournalError(path + ": " + sqlite3_errmsg(db));
  }
  ~Stmt() { sqlite3_finalize(s_); }
  Stmt& bind(int i, int64_t v) {
    sqlite3_bind_int64(s_, i, v);
    return *this;
  }
  Stmt& bind(int i, const std::string& v) {
    sqlite3_bind_text(s_, i, v.data(), int(v.size()), SQLITE_TRANSIENT);
    return *this;
  }
  Stmt& blob(int i, const std::string& v) {
    sqlite3_bind_blob(s_, i, v.data(), int(v.size()), SQLITE_TRANSIENT);
    return *this;
  }
  /// SQLITE_ROW, SQLITE_DONE or SQLITE_CONSTRAINT; anything else throws.
  int step(const std::string& path) {
    int rc = sqlite3_step(s_);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE && (rc & 0xff) != SQLITE_CONSTRAINT)
      throw JournalError(path + ": " + sqlite3_errmsg(db_));
    return rc;
  }
  int64_t i64(int col) { return sqlite3_column_int64(s_, col); }
  std::string text(int col) {
    auto p = sqlite3_column_text(s_, col);
    return p ? std::string(reinterpret_cast<const char*>(p), size_t(sqlite3_column_bytes(s_, col))) : std::string();
  }
  std::string bytes(int col) {
    auto p = static_cast<const char*>(sqlite3_column_blob(s_, col));
    return p ? std::string(p, size_t(sqlite3_column_bytes(s_, col))) : std::string();
  }

 private:
  sqlite3* db_;
  sqlite3_stmt* s_ = nullptr;
};

int pragma_int(sqlite3* db, const char* name, const std::string& path) {
  Stmt s(db, (std::string("PRAGMA ") + name).c_str(), path);
  return s.step(path) == SQLITE_ROW ? int(s.i64(0)) : 0;
}

JobState job_state_from(const std::string& s) {
  if (s == "done") return JobState::kDone;
  if (s == "failed") return JobState::kFailed;
  if (s == "cancelled") return JobState::kCancelled;
  return JobState::kQueued;
}

}  // namespace

Journal::Journal(const std::string& path) : path_(path) {
  const bool existed = ::access(path.c_str(), F_OK) == 0;
  if (existed && ::access(path.c_str(), R_OK | W_OK) != 0)
    throw JournalError(path + ": journal is not readable and writable by this user");
  if (sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX,
                      nullptr) != SQLITE_OK) {
    std::string msg = db_ ? sqlite3_errmsg(db_) : "out of memory";
    sqlite3_close(db_);
    db_ = nullptr;
    throw JournalError(path + ": cannot open the journal: " + msg);
  }
  sqlite3_busy_timeout(db_, 5000);
  try {
    // Read before writing anything: a file that is not ours is left untouched.
    const int app = pragma_int(db_, "application_id", path);
    const int version = pragma_int(db_, "user_version", path);
    int64_t n_tables = 0;
    {
      Stmt tables(db_, "SELECT count(*) FROM sqlite_master", path);  // finalized before any write
      tables.step(path);
      n_tables = tables.i64(0);
    }
    if (n_tables > 0 && app != kApplicationId)
      throw JournalError(path + ": not a zkfarm journal (another SQLite database); refusing to touch it");
    if (app == kApplicationId && version > kSchemaVersion)
      throw JournalError(path + ": journal schema " + std::to_string(version) + " is newer than this zkfarmd's (" +
                         std::to_string(kSchemaVersion) + ")");
    exec("PRAGMA journal_mode=WAL");
    exec("PRAGMA synchronous=FULL");
    exec("PRAGMA foreign_keys=ON");
    if (n_tables == 0) {
      exec("BEGIN");
      exec(kSchema);
      exec(("PRAGMA application_id=" + std::to_string(kApplicationId)).c_str());
      exec(("PRAGMA user_version=" + std::to_string(kSchemaVersion)).c_str());
      exec("COMMIT");
    }
    Stmt check(db_, "PRAGMA quick_check", path);
    if (check.step(path) != SQLITE_ROW || check.text(0) != "ok")
      throw JournalError(path + ": journal is corrupt (quick_check: " + check.text(0) + ")");
  } catch (...) {
    sqlite3_close(db_);
    db_ = nullptr;
    throw;
  }
}

Journal::~Journal() {
  if (db_) sqlite3_close(db_);
}

void Journal::exec(const char* sql) {
  char* err = nullptr;
  if (sqlite3_exec(db_, sql, nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = err ? err : sqlite3_errmsg(db_);
    sqlite3_free(err);
    if (msg.find("not a database") != std::string::npos || msg.find("malformed") != std::string::npos)
      throw JournalError(path_ + ": journal is corrupt or not a database (" + msg + "); refusing to touch it");
    throw JournalError(path_ + ": " + msg);
  }
}

uint64_t Journal::add_job(const Job& job) {
  exec("BEGIN IMMEDIATE");
  try {
    Stmt ins(db_,
             "INSERT INTO jobs (priority, zkey, out, slot_bytes, n_public, state, submitted_ms) "
             "VALUES (?, ?, ?, ?, ?, 'queued', ?)",
             path_);
    ins.bind(1, int64_t(job.priority)).bind(2, job.zkey).bind(3, job.out).bind(4, int64_t(job.slot_bytes));
    ins.bind(5, int64_t(job.n_public)).bind(6, job.submitted_ms);
    ins.step(path_);
    const uint64_t id = uint64_t(sqlite3_last_insert_rowid(db_));
    for (uint32_t i = 0; i < job.parts.size(); ++i) {
      Stmt p(db_, "INSERT INTO partitions (job, idx, wtns, public_json) VALUES (?, ?, ?, ?)", path_);
      p.bind(1, int64_t(id)).bind(2, int64_t(i)).bind(3, job.parts[i].wtns).bind(4, job.parts[i].public_json);
      p.step(path_);
    }
    exec("COMMIT");
    return id;
  } catch (...) {
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    throw;
  }
}

bool Journal::add_proof(uint64_t job, uint32_t index, const std::string& proof, int64_t proved_ms, int64_t synth_ms,
                        int64_t prove_ms) {
  Stmt s(db_,
         "INSERT OR IGNORE INTO proofs (job, idx, proof, proved_ms, synth_ms, prove_ms) VALUES (?, ?, ?, ?, ?, ?)",
         path_);
  s.bind(1, int64_t(job)).bind(2, int64_t(index)).blob(3, proof).bind(4, proved_ms).bind(5, synth_ms).bind(6, prove_ms);
  s.step(path_);
  return sqlite3_changes(db_) == 1;
}

void Journal::finish_job(uint64_t job, JobState state, const std::string& error, int64_t finished_ms) {
  Stmt s(db_, "UPDATE jobs SET state = ?, error = ?, finished_ms = ? WHERE id = ?", path_);
  s.bind(1, std::string(job_state_name(state))).bind(2, error).bind(3, finished_ms).bind(4, int64_t(job));
  s.step(path_);
}

void Journal::set_started(uint64_t job, int64_t started_ms) {
  Stmt s(db_, "UPDATE jobs SET started_ms = ? WHERE id = ? AND started_ms = 0", path_);
  s.bind(1, started_ms).bind(2, int64_t(job));
  s.step(path_);
}

std::vector<Job> Journal::load() {
  std::map<uint64_t, Job> jobs;
  {
    Stmt s(db_,
           "SELECT id, priority, zkey, out, slot_bytes, n_public, state, error, submitted_ms, started_ms, finished_ms "
           "FROM jobs ORDER BY id",
           path_);
    while (s.step(path_) == SQLITE_ROW) {
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
      jobs.emplace(j.id, std::move(j));
    }
  }
  Stmt s(db_,
         "SELECT p.job, p.idx, p.wtns, q.proof IS NOT NULL, coalesce(q.synth_ms, 0), coalesce(q.prove_ms, 0), "
         "p.public_json "
         "FROM partitions p LEFT JOIN proofs q ON q.job = p.job AND q.idx = p.idx ORDER BY p.job, p.idx",
         path_);
  while (s.step(path_) == SQLITE_ROW) {
    auto it = jobs.find(uint64_t(s.i64(0)));
    if (it == jobs.end()) continue;
    Partition p;
    p.index = uint32_t(s.i64(1));
    p.wtns = s.text(2);
    const bool proved = s.i64(3) != 0;
    p.synth_ms = s.i64(4);
    p.prove_ms = s.i64(5);
    p.public_json = s.text(6);
    Job& j = it->second;
    p.state = proved ? PartState::kDone
              : j.state == JobState::kFailed ? PartState::kFailed
              : j.state == JobState::kCancelled ? PartState::kCancelled
                                                : PartState::kQueued;
    j.parts.push_back(p);
  }
  std::vector<Job> out;
  for (auto& [id, j] : jobs) {
    if (!j.terminal()) j.state = j.count(PartState::kDone) > 0 ? JobState::kRunning : JobState::kQueued;
    out.push_back(std::move(j));
  }
  return out;
}

std::optional<JournaledProof> Journal::proof(uint64_t job, uint32_t index) {
  Stmt s(db_,
         "SELECT q.proof, p.public_json FROM proofs q JOIN partitions p ON p.job = q.job AND p.idx = q.idx "
         "WHERE q.job = ? AND q.idx = ?",
         path_);
  s.bind(1, int64_t(job)).bind(2, int64_t(index));
  if (s.step(path_) != SQLITE_ROW) return std::nullopt;
  return JournaledProof{s.bytes(0), s.text(1)};
}

size_t Journal::prune(int64_t cutoff_ms) {
  Stmt s(db_, "DELETE FROM jobs WHERE state IN ('done', 'failed', 'cancelled') AND finished_ms > 0 AND finished_ms < ?",
         path_);
  s.bind(1, cutoff_ms);
  s.step(path_);
  return size_t(sqlite3_changes(db_));
}

}  // namespace zkfarm::supervisor
