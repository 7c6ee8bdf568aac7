#pragma once
// The one SQLite wrapper of the tree: a connection (Db), a prepared statement
// (Stmt) and a write transaction (Transaction), used by zkfarmd's journal
// (supervisor/ledger/journal.*) and zkfarm-api's token store (api/store.*).
//
// Every fault throws through the connection's Thrower with "WHERE: SQLite's
// message (CODE_NAME)" and SQLite's extended result code, read right after
// the failing call (a later call may overwrite the message): each owner
// throws its own error type (JournalError, StoreError), so its callers
// catch what they always caught. The default throws sqlite::Error.
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>

struct sqlite3;
struct sqlite3_stmt;

namespace zkfarm::sqlite {

/// A fault SQLite reported, when the connection's owner named no error type
/// of its own. code(): SQLite's extended result code
/// (https://www.sqlite.org/rescode.html).
class Error : public std::runtime_error {
 public:
  Error(const std::string& what, int code) : std::runtime_error(what), code_(code) {}
  int code() const { return code_; }

 private:
  int code_;
};

/// Throws the owner's error for `what` (the whole message) and `code` (SQLite's
/// extended result code). Must not return.
using Thrower = void (*)(const std::string& what, int code);

/// The name of a result code's primary part ("SQLITE_FULL"), for messages.
const char* code_name(int rc);

/// One connection, closed by its destructor (sqlite3_close_v2).
class Db {
 public:
  Db() = default;
  /// Opens `path` with sqlite3_open_v2's `flags` and `vfs` ("": the default)
  /// and sets a busy timeout of `busy_ms` (another connection holding the
  /// write lock: an operator's sqlite3, zkfarmctl beside zkfarm-api). Throws
  /// through `thrower` "PATH: cannot open: MESSAGE" on a failure, `what_open`
  /// replacing "cannot open" when given.
  Db(const std::string& path, int flags, const std::string& vfs, int busy_ms, Thrower thrower = nullptr,
     const std::string& what_open = "cannot open");
  ~Db() { close(); }
  Db(Db&& o) noexcept : db_(o.db_), thrower_(o.thrower_) { o.db_ = nullptr; }
  Db& operator=(Db&& o) noexcept;
  Db(const Db&) = delete;
  Db& operator=(const Db&) = delete;

  /// The handle, for what the wrapper does not cover (hooks, checkpoints, config).
  sqlite3* get() const { return db_; }
  explicit operator bool() const { return db_ != nullptr; }
  /// Runs `sql` (one or more statements, no parameters). Throws "WHERE: …".
  void exec(const char* sql, const std::string& where);
  /// Runs `sql` and ignores any fault (a ROLLBACK after a failed write).
  void exec_quietly(const char* sql) noexcept;
  /// Throws "WHERE: SQLite's message (CODE)" for the call that returned `rc`.
  [[noreturn]] void fail(const std::string& where, int rc) const;
  /// Throws `what` with `code` through the connection's thrower.
  [[noreturn]] void raise(const std::string& what, int code) const;
  void busy_timeout(int ms);
  /// Rows the last INSERT, UPDATE or DELETE changed.
  int64_t changes() const;
  int64_t last_insert_rowid() const;
  /// False while a transaction is open.
  bool autocommit() const;
  /// Closes now; `keep_wal`: without the checkpoint a close would otherwise
  /// run (a refused journal stays exactly as it was found).
  void close(bool keep_wal = false) noexcept;

 private:
  sqlite3* db_ = nullptr;
  Thrower thrower_ = nullptr;
};

/// A prepared statement, finalized on scope exit (which also ends its read or
/// write if it was still running).
class Stmt {
 public:
  /// Prepares `sql`; faults are reported as `where`.
  Stmt(const Db& db, const char* sql, std::string where);
  ~Stmt();
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;

  Stmt& bind(int i, int64_t v);
  Stmt& bind(int i, const std::string& v);
  /// NULL when empty.
  Stmt& bind(int i, const std::optional<uint64_t>& v);
  Stmt& bind_null(int i);
  Stmt& blob(int i, const std::string& v);
  /// true: a row is ready; false: done. Any other outcome throws.
  bool step();
  /// Steps to the end (a write, or a read whose rows are not wanted).
  void run();
  /// Ready to run again with new bindings.
  void reset();
  int64_t i64(int col);
  bool null(int col);
  std::string text(int col);
  std::string bytes(int col);

 private:
  Stmt& check(int rc);
  const Db& db_;
  std::string where_;
  sqlite3_stmt* s_ = nullptr;
};

/// BEGIN IMMEDIATE (the write lock taken at once, so that a busy database
/// fails here rather than halfway through), rolled back unless commit() ran.
class Transaction {
 public:
  Transaction(Db& db, const std::string& where);
  ~Transaction();
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  /// COMMIT. Throws; the destructor then rolls back what is left.
  void commit();

 private:
  Db& db_;
  std::string where_;
  bool done_ = false;
};

}  // namespace zkfarm::sqlite
