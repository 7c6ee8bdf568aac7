#include "supervisor/ledger/pg_deadline.hpp"

#include <libpq-fe.h>
#include <poll.h>

#include <cerrno>

namespace zkfarm::supervisor {

namespace {

using Clock = std::chrono::steady_clock;

// Waits until the socket is ready for `events` or the deadline passes.
// Returns the revents (0: the deadline passed).
short wait_socket(PGconn* conn, short events, Clock::time_point deadline) {
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return 0;
    pollfd p{PQsocket(conn), events, 0};
    const int n = ::poll(&p, 1, int(std::min<long long>(left, 1000)));
    if (n > 0) return p.revents ? p.revents : events;
    if (n < 0 && errno != EINTR) return POLLERR;
  }
}

}  // namespace

pg_result* pg_exec_deadline(pg_conn* conn, const std::string& sql, int n, const char* const* values,
                            const int* lengths, const int* formats, std::chrono::milliseconds budget,
                            bool* timed_out) {
  *timed_out = false;
  const auto deadline = Clock::now() + budget;
  if (PQsocket(conn) < 0 || PQsetnonblocking(conn, 1) != 0) return nullptr;
  const int sent = n == 0 ? PQsendQuery(conn, sql.c_str())
                          : PQsendQueryParams(conn, sql.c_str(), n, nullptr, values, lengths, formats, 0);
  if (!sent) return nullptr;
  // Send what libpq buffered (a large parameter may not fit the socket).
  for (;;) {
    const int f = PQflush(conn);
    if (f == 0) break;
    if (f < 0) return nullptr;
    const short ev = wait_socket(conn, POLLOUT | POLLIN, deadline);
    if (ev == 0) {
      *timed_out = true;
      return nullptr;
    }
    if ((ev & POLLIN) && !PQconsumeInput(conn)) return nullptr;
  }
  // Collect every result: PQexec's answer is the last one, or the first error.
  PGresult* kept = nullptr;
  for (;;) {
    while (PQisBusy(conn)) {
      if (wait_socket(conn, POLLIN, deadline) == 0) {
        *timed_out = true;
        if (kept) PQclear(kept);
        return nullptr;
      }
      if (!PQconsumeInput(conn)) {
        if (kept) PQclear(kept);
        return nullptr;
      }
    }
    PGresult* r = PQgetResult(conn);
    if (!r) break;
    if (kept && PQresultStatus(kept) == PGRES_FATAL_ERROR) {
      PQclear(r);
      continue;
    }
    if (kept) PQclear(kept);
    kept = r;
  }
  return kept;
}

}  // namespace zkfarm::supervisor
