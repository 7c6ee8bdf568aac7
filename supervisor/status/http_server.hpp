#pragma once
// zkfarmd's HTTP endpoints (GET /status, /metrics, /healthz, /readyz) on the
// farm's one HTTP server (http/server.hpp, Boost.Beast): one I/O thread, so a
// slow or idle client costs one descriptor and a few KB, never a thread.
// Every local user can reach the port, so the server runs with zkfarmd's
// limits (http/server.hpp describes each):
//
// - connections: at most `max_connections` open. A new one at the cap drops
//   the connection that has waited longest for a complete request (then, if
//   none waits, the one longest in a response), so a probe always gets in and
//   slowloris cannot starve it; out of descriptors, the longest waiter is
//   dropped to make room, or accepting pauses for `accept_pause_ms`;
// - time: a request's headers must be complete within `request_timeout_ms` of
//   the connection's start or of the previous response; writing a response
//   gets as long. Past that the connection is closed;
// - memory: headers ≤ `header_limit` bytes (431), no request bodies (413),
//   GET and HEAD only (others 405 with Allow, connection kept), anything
//   unparsable 400; one response in flight per connection, pipelined
//   requests answered in order; after a closing reply (an error,
//   "Connection: close", HTTP/1.0) the connection sends FIN and drops up to
//   64 KiB more of the client's bytes until it closes;
// - log: client faults (bad requests, timeouts of partial requests) and
//   evictions at most a few lines a second each, plus how many were left out.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "http/address.hpp"
#include "http/server.hpp"

namespace zkfarm::http {

/// Where the answers come from. Each is called on the server's I/O thread, once
/// per request it serves, so each must be thread-safe against the supervisor's
/// loop (Supervisor's snapshot functions are). A missing one answers 503.
struct Content {
  std::function<std::string()> status;   ///< the status object as JSON text (docs/protocol.md); empty: not rendered yet
  std::function<std::string()> metrics;  ///< Prometheus text format 0.0.4; empty: not rendered yet
  std::function<bool()> healthy;         ///< GET /healthz: 200 when true, else 503
  std::function<bool()> ready;           ///< GET /readyz: 200 when true, else 503
  std::function<std::string()> not_ready_reason;  ///< optional: the 503's reason ("not ready: REASON")
};

/// One request line and what keep-alive needs, as the Router sees it.
struct Request {
  std::string method;       ///< as sent ("GET")
  std::string target;       ///< as sent ("/status?x=1")
  unsigned version = 11;    ///< 10 or 11
  bool keep_alive = true;   ///< per RFC 9112 §9.3
};

/// An answer of the Router, before the server writes it.
struct Response {
  unsigned status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::shared_ptr<const std::string> body;  ///< never null after Router::respond
  bool allow_header = false;                ///< add "Allow: GET, HEAD" (405)
};

/// GET/HEAD /status, /metrics, /healthz, /readyz (a query string is ignored);
/// everything else 404 (path) or 405 (method). /status serves the status
/// object itself when `status_detail` is true, else public_status() of it (counts
/// only); the last reduction is cached while the snapshot text is unchanged.
/// Not thread-safe (the cache): one Router per I/O thread.
class Router {
 public:
  Router(Content content, bool status_detail);
  /// The answer to `req` (status, type, body); never throws for any request.
  /// Content callbacks that throw give 500.
  Response respond(const Request& req);

 private:
  Content content_;
  bool status_detail_;
  std::string last_status_in_;
  std::shared_ptr<const std::string> last_status_out_;
};

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
  uint64_t timed_out = 0;     ///< closed at a deadline
  uint64_t answered = 0;      ///< responses written
  uint64_t accept_errors = 0; ///< accepts that failed (EMFILE, ENFILE, …)
};

/// zkfarmd's listener: the shared server (http::core::Server) with zkfarmd's
/// limits, serving a Router.
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
