// Statements with a client-side deadline. libpq's PQexec waits for as long as
// the server takes; a server that is alive at the TCP level but does not
// answer (a frozen process, a stalled disk, a paused VM) never trips
// statement_timeout, TCP keepalives or tcp_user_timeout, because the kernel
// still acknowledges. These calls send asynchronously and poll the socket
// until a deadline on the steady clock.
#pragma once

#include <chrono>
#include <string>

struct pg_conn;
struct pg_result;

namespace zkfarm::supervisor {

/// Runs `sql` on `conn` (made non-blocking here) with `n` text/binary
/// parameters (`values`/`lengths`/`formats` as PQexecParams takes them; n = 0
/// sends a simple query, which may hold several statements) and waits at
/// most `budget`. Returns what PQexec would: the last result (or the first
/// error), owned by the caller; nullptr when the connection failed or the
/// deadline passed (`*timed_out` says which). After nullptr the connection is
/// in an unknown state: close it.
pg_result* pg_exec_deadline(pg_conn* conn, const std::string& sql, int n, const char* const* values,
                            const int* lengths, const int* formats, std::chrono::milliseconds budget,
                            bool* timed_out);

}  // namespace zkfarm::supervisor
