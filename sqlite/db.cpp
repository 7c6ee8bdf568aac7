#include "sqlite/db.hpp"

#include <sqlite3.h>

#include <cstdlib>

namespace zkfarm::sqlite {

const char* code_name(int rc) {
  switch (rc & 0xff) {
    case SQLITE_ERROR: return "SQLITE_ERROR";
    case SQLITE_INTERNAL: return "SQLITE_INTERNAL";
    case SQLITE_PERM: return "SQLITE_PERM";
    case SQLITE_ABORT: return "SQLITE_ABORT";
    case SQLITE_BUSY: return "SQLITE_BUSY";
    case SQLITE_LOCKED: return "SQLITE_LOCKED";
    case SQLITE_NOMEM: return "SQLITE_NOMEM";
    case SQLITE_READONLY: return "SQLITE_READONLY";
    case SQLITE_INTERRUPT: return "SQLITE_INTERRUPT";
    case SQLITE_IOERR: return "SQLITE_IOERR";
    case SQLITE_CORRUPT: return "SQLITE_CORRUPT";
    case SQLITE_NOTFOUND: return "SQLITE_NOTFOUND";
    case SQLITE_FULL: return "SQLITE_FULL";
    case SQLITE_CANTOPEN: return "SQLITE_CANTOPEN";
    case SQLITE_PROTOCOL: return "SQLITE_PROTOCOL";
    case SQLITE_SCHEMA: return "SQLITE_SCHEMA";
    case SQLITE_TOOBIG: return "SQLITE_TOOBIG";
    case SQLITE_CONSTRAINT: return "SQLITE_CONSTRAINT";
    case SQLITE_MISMATCH: return "SQLITE_MISMATCH";
    case SQLITE_MISUSE: return "SQLITE_MISUSE";
    case SQLITE_NOLFS: return "SQLITE_NOLFS";
    case SQLITE_AUTH: return "SQLITE_AUTH";
    case SQLITE_RANGE: return "SQLITE_RANGE";
    case SQLITE_NOTADB: return "SQLITE_NOTADB";
    default: return "SQLITE_?";
  }
}

namespace {
[[noreturn]] void default_thrower(const std::string& what, int code) { throw Error(what, code); }
}  // namespace

Db::Db(const std::string& path, int flags, const std::string& vfs, int busy_ms, Thrower thrower,
       const std::string& what_open)
    : thrower_(thrower ? thrower : &default_thrower) {
  const int rc = sqlite3_open_v2(path.c_str(), &db_, flags, vfs.empty() ? nullptr : vfs.c_str());
  if (rc != SQLITE_OK) {
    const std::string msg = db_ ? sqlite3_errmsg(db_) : "out of memory";
    close();
    raise(path + ": " + what_open + ": " + msg, rc);
  }
  sqlite3_busy_timeout(db_, busy_ms);
}

Db& Db::operator=(Db&& o) noexcept {
  if (this != &o) {
    close();
    db_ = o.db_;
    thrower_ = o.thrower_;
    o.db_ = nullptr;
  }
  return *this;
}

void Db::raise(const std::string& what, int code) const {
  (thrower_ ? thrower_ : &default_thrower)(what, code);
  std::abort();  // a thrower that returns is a bug
}

void Db::fail(const std::string& where, int rc) const {
  const int ext = sqlite3_extended_errcode(db_);
  const int code = (ext & 0xff) == (rc & 0xff) ? ext : rc;
  raise(where + ": " + sqlite3_errmsg(db_) + " (" + code_name(code) + ")", code);
}

void Db::exec(const char* sql, const std::string& where) {
  char* err = nullptr;
  const int rc = sqlite3_exec(db_, sql, nullptr, nullptr, &err);
  if (rc == SQLITE_OK) return;
  const int ext = sqlite3_extended_errcode(db_);
  const std::string msg = err ? err : sqlite3_errmsg(db_);
  sqlite3_free(err);
  const int code = (ext & 0xff) == (rc & 0xff) ? ext : rc;
  raise(where + ": " + msg + " (" + code_name(code) + ")", code);
}

void Db::exec_quietly(const char* sql) noexcept { sqlite3_exec(db_, sql, nullptr, nullptr, nullptr); }

void Db::busy_timeout(int ms) { sqlite3_busy_timeout(db_, ms); }

int64_t Db::changes() const { return sqlite3_changes64(db_); }

int64_t Db::last_insert_rowid() const { return sqlite3_last_insert_rowid(db_); }

bool Db::autocommit() const { return sqlite3_get_autocommit(db_) != 0; }

void Db::close(bool keep_wal) noexcept {
  if (!db_) return;
  if (keep_wal) sqlite3_db_config(db_, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, nullptr);
  sqlite3_close_v2(db_);
  db_ = nullptr;
}

Stmt::Stmt(const Db& db, const char* sql, std::string where) : db_(db), where_(std::move(where)) {
  const int rc = sqlite3_prepare_v2(db.get(), sql, -1, &s_, nullptr);
  if (rc != SQLITE_OK) db.fail(where_, rc);
}

Stmt::~Stmt() { sqlite3_finalize(s_); }

Stmt& Stmt::check(int rc) {
  if (rc != SQLITE_OK) db_.fail(where_, rc);
  return *this;
}

Stmt& Stmt::bind(int i, int64_t v) { return check(sqlite3_bind_int64(s_, i, v)); }

Stmt& Stmt::bind(int i, const std::string& v) {
  return check(sqlite3_bind_text64(s_, i, v.data(), v.size(), SQLITE_TRANSIENT, SQLITE_UTF8));
}

Stmt& Stmt::bind(int i, const std::optional<uint64_t>& v) { return v ? bind(i, int64_t(*v)) : bind_null(i); }

Stmt& Stmt::bind_null(int i) { return check(sqlite3_bind_null(s_, i)); }

Stmt& Stmt::blob(int i, const std::string& v) {
  return check(sqlite3_bind_blob64(s_, i, v.data(), v.size(), SQLITE_TRANSIENT));
}

bool Stmt::step() {
  const int rc = sqlite3_step(s_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  db_.fail(where_, rc);
}

void Stmt::run() {
  while (step()) {
  }
}

void Stmt::reset() {
  sqlite3_reset(s_);
  sqlite3_clear_bindings(s_);
}

int64_t Stmt::i64(int col) { return sqlite3_column_int64(s_, col); }

bool Stmt::null(int col) { return sqlite3_column_type(s_, col) == SQLITE_NULL; }

std::string Stmt::text(int col) {
  auto p = sqlite3_column_text(s_, col);
  return p ? std::string(reinterpret_cast<const char*>(p), size_t(sqlite3_column_bytes(s_, col))) : std::string();
}

std::string Stmt::bytes(int col) {
  auto p = static_cast<const char*>(sqlite3_column_blob(s_, col));
  return p ? std::string(p, size_t(sqlite3_column_bytes(s_, col))) : std::string();
}

Transaction::Transaction(Db& db, const std::string& where) : db_(db), where_(where) {
  db_.exec("BEGIN IMMEDIATE", where_);
}

Transaction::~Transaction() {
  if (!done_ && !db_.autocommit()) db_.exec_quietly("ROLLBACK");
}

void Transaction::commit() {
  db_.exec("COMMIT", where_);
  done_ = true;
}

}  // namespace zkfarm::sqlite
