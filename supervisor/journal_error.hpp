#pragma once
// The one error type of the journal (supervisor/journal.*) and of the WAL check
// that runs before it opens (supervisor/wal_check.*).
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
  int sqlite_code() const { return sqlite_code_; }

 private:
  int sqlite_code_;
};

}  // namespace zkfarm::supervisor
