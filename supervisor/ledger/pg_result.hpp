#pragma once
// PgQueue's result of one statement (pg_queue.cpp, pg_jobs.cpp,
// pg_leases.cpp): private to the queue's sources.
#include <libpq-fe.h>

#include <cstdint>
#include <new>
#include <string>

#include "supervisor/ledger/pg_queue.hpp"

namespace zkfarm::supervisor {

/// A PGresult that frees itself; values read as text (libpq's text format).
class PgQueue::Result {
 public:
  explicit Result(PGresult* r) : r_(r) {}
  Result(Result&& o) noexcept : r_(o.r_) { o.r_ = nullptr; }
  ~Result() {
    if (r_) PQclear(r_);
  }
  int rows() const { return PQntuples(r_); }
  bool null(int row, int col) const { return PQgetisnull(r_, row, col); }
  std::string text(int row, int col) const { return std::string(PQgetvalue(r_, row, col), PQgetlength(r_, row, col)); }
  int64_t i64(int row, int col) const { return null(row, col) ? 0 : std::stoll(text(row, col)); }
  uint64_t u64(int row, int col) const { return null(row, col) ? 0 : std::stoull(text(row, col)); }
  double f64(int row, int col) const { return null(row, col) ? 0 : std::stod(text(row, col)); }
  // A bytea column (text format: \x followed by hex digits).
  std::string bytes(int row, int col) const {
    if (null(row, col)) return {};
    size_t n = 0;
    unsigned char* b = PQunescapeBytea(reinterpret_cast<const unsigned char*>(PQgetvalue(r_, row, col)), &n);
    if (!b) throw std::bad_alloc();
    std::string out(reinterpret_cast<const char*>(b), n);
    PQfreemem(b);
    return out;
  }

 private:
  PGresult* r_;
};

}  // namespace zkfarm::supervisor
