#pragma once
// The one error type of the ledgers (supervisor/ledger.hpp: the SQLite
// journal, the PostgreSQL queue) and of the WAL check that runs before the
// journal opens (supervisor/wal_check.*).
#include <stdexcept>
#include <string>

namespace zkfarm::supervisor {

/// A journal fault. what() names the file, the operation that failed and the
/// fault (SQLite's message and result code name when SQLite reported it), and
/// never quotes the file's contents. sqlite_code() is SQLite's extended result
/// code (https://www.sqlite.org/rescode.html), or 0 when the fault was found
/// by zkfarm itself (a damaged WAL frame, a foreign file, a newer schema).
class JournalError : public std::runtime_error {
 public:
  explicit JournalError(const std::string& what, int sqlite_code = 0)
      : std::runtime_error(what), sqlite_code_(sqlite_code) {}
  /// A fault of a store that is not SQLite (the PostgreSQL queue): `storage`
  /// says whether it is storage_fault() (the server is unreachable or restarting).
  static JournalError of_store(const std::string& what, bool storage) {
    JournalError e(what);
    e.storage_ = storage;
    return e;
  }
  int sqlite_code() const { return sqlite_code_; }
  /// True when the storage failed rather than the request: a full disk, an
  /// I/O error, a read-only file or filesystem, a lock held elsewhere, no
  /// memory. Such a write may succeed later (Journal::writable() tells when);
  /// any other fault (a constraint, a value too big, a damaged file) will
  /// fail again the same way.
  bool storage_fault() const {
    if (storage_) return true;
    switch (sqlite_code_ & 0xff) {
      case 5:   // SQLITE_BUSY
      case 6:   // SQLITE_LOCKED
      case 7:   // SQLITE_NOMEM
      case 8:   // SQLITE_READONLY
      case 10:  // SQLITE_IOERR
      case 13:  // SQLITE_FULL
      case 14:  // SQLITE_CANTOPEN
      case 15:  // SQLITE_PROTOCOL
        return true;
      default:
        return false;
    }
  }

 private:
  int sqlite_code_;
  bool storage_ = false;
};

}  // namespace zkfarm::supervisor
