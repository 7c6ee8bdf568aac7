#pragma once
// zkfarmd's HTTP listener (GET /status, /metrics, /healthz, /readyz): one I/O
// thread, asynchronous (Boost.Asio), so a slow or idle client costs one
// descriptor and a few KB, never a thread. Every local user can reach the
// port, so every resource a client can hold is bounded:
//
// - connections: at most `max_connections` open. A new one at the cap drops
//   the connection that has waited longest for a complete request (then, if
//   none waits, the one longest in a response), so a probe always gets in and
//   slowloris cannot starve it: a probe is answered unless `max_connections`
//   newer connections arrive between its connect and its last header byte;
// - descriptors: EMFILE/ENFILE on accept drops the longest-waiting connection
//   and retries, or, with none of ours to give back, pauses accepting for
//   `accept_pause_ms`; never a crash, never a busy loop;
// - time: a request's headers must be complete within `request_timeout_ms` of
//   the connection's start or of the previous response; writing a response
//   gets as long. Past that the connection is reset;
// - memory: headers ≤ `header_limit` bytes (431), no request bodies (413),
//   one response in flight per connection, pipelined requests answered in order;
//   after a closing reply (an error, "Connection: close") the connection sends
//   FIN and drops up to 64 KiB more of the client's bytes until it closes, so
//   the client reads the reply instead of a reset;
// - log: client faults (bad requests, timeouts of partial requests) and
//   evictions at most a few lines a second each, plus how many were left out.
//
// The listener binds without SO_REUSEPORT, so no other socket can share the
// port; SO_REUSEADDR is set (a restart must not fail on the previous run's
// TIME_WAIT connections), which on Linux never lets a second socket bind an
// address with a listener on it.
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "supervisor/http_exchange.hpp"

namespace zkfarm::http {

/// What the server logs. Every line is fixed text plus numbers and the peer's
/// address, never the client's bytes.
enum class LogLevel { kInfo, kWarn };
using LogFn = std::function<void(LogLevel, std::string_view)>;

struct ServerOptions {
  std::string address;                 ///< "HOST:PORT", "[V6]:PORT"; port 0 picks a free one (tests)
  unsigned max_connections = 64;       ///< open connections at most (≥ 1; http_max_connections)
  unsigned request_timeout_ms = 5000;  ///< per request's headers, and per response's write (http_request_timeout_ms)
  bool status_detail = false;          ///< GET /status: the whole status object; else counts only (http_status_detail)
  std::size_t header_limit = 8192;     ///< request line plus header fields, bytes
  unsigned accept_pause_ms = 100;      ///< pause of the accept loop when out of descriptors
  unsigned log_lines_per_second = 5;   ///< per kind of event (client faults, evictions, accept errors)
  LogFn log;                           ///< may be empty (no log); called on the I/O thread
};

/// Counters for tests and diagnostics (read from any thread).
struct ServerStats {
  uint64_t accepted = 0;      ///< connections accepted
  uint64_t open = 0;          ///< connections open now
  uint64_t evicted = 0;       ///< dropped at the cap (or to free a descriptor)
  uint64_t timed_out = 0;     ///< reset at the deadline
  uint64_t answered = 0;      ///< responses written
  uint64_t accept_errors = 0; ///< accepts that failed (EMFILE, ENFILE, …)
};

/// "HOST:PORT" or "[V6]:PORT" → (host, port), checked: a port of 1-5 digits
/// up to 65535, brackets around an IPv6 host. Throws std::runtime_error
/// "WHAT must be HOST:PORT, got '…'" (also zkfarm-api's --listen).
std::pair<std::string, uint16_t> split_address(const std::string& address, const std::string& what = "http_address");

class HttpServer {
 public:
  /// Resolves and binds `opts.address` and listens; serves nothing until
  /// start(). Throws std::runtime_error "cannot listen on HOST:PORT: address
  /// already in use" (or the system's reason), or "http_address must be
  /// HOST:PORT, got '…'" for a malformed address.
  explicit HttpServer(ServerOptions opts);
  /// Stops the I/O thread and closes every connection.
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  /// Starts the I/O thread serving `content`. Connections made before this
  /// wait in the listen backlog. Call once.
  void start(Content content);

  /// The bound port (the chosen one when the address asked for port 0).
  uint16_t port() const;
  /// The bound address, "127.0.0.1:17100" ("[::1]:17100" for IPv6).
  std::string address() const;
  /// The connection cap in force (opts.max_connections, at least 1).
  unsigned max_connections() const;
  ServerStats stats() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace zkfarm::http
