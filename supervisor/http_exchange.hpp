#pragma once
// HTTP/1.1 for zkfarmd's status port without sockets: bytes in → parsed
// requests → routed → response bytes out, one response per request, in order.
// HttpServer (http_server.hpp) runs one Exchange per connection; the fuzz
// target (fuzz/http_request_fuzz.cpp) and the unit tests drive it directly.
//
// What is accepted (RFC 9112 framing, parsed by Boost.Beast's request parser):
// GET and HEAD only (others: 405, connection kept), no request body (a
// Content-Length above 0 or chunked: 413, then close), headers of at most
// `header_limit` bytes (431, then close), anything unparsable: 400, then
// close. Keep-alive as HTTP/1.0 and 1.1 define it; pipelined requests are
// answered one by one in order.
#include <cstddef>
#include <functional>
#include <memory>
#include <span>
#include <string>

namespace zkfarm::http {

/// Where the answers come from. Each is called on the server's I/O thread, once
/// per request it serves, so each must be thread-safe against the supervisor's
/// loop (Supervisor's snapshot functions are). A missing one answers 503.
struct Content {
  std::function<std::string()> status;   ///< the status object as JSON text (docs/protocol.md); empty: not rendered yet
  std::function<std::string()> metrics;  ///< Prometheus text format 0.0.4; empty: not rendered yet
  std::function<bool()> healthy;         ///< GET /healthz: 200 when true, else 503
  std::function<bool()> ready;           ///< GET /readyz: 200 when true, else 503
};

/// One parsed request line and what keep-alive needs.
struct Request {
  std::string method;       ///< as sent ("GET"); the parser allows only token characters
  std::string target;       ///< as sent ("/status?x=1"); at most the header limit long
  unsigned version = 11;    ///< 10 or 11
  bool keep_alive = true;   ///< per RFC 9112 §9.3: 1.1 unless "Connection: close"; 1.0 only with "keep-alive"
};

/// An answer before serialization.
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

/// One response ready to write: `head` (status line and headers), then `body`
/// (null for HEAD requests and bodiless answers).
struct Reply {
  unsigned status = 0;
  std::string head;
  std::shared_ptr<const std::string> body;
  bool close = false;  ///< close the connection once this is written (nothing more will be answered)
  std::string fault;   ///< for the log when the client erred (400, 405, 413, 431): a fixed phrase, never the client's bytes
};

/// The byte stream of one connection. Feed received bytes with prepare/commit,
/// then take replies with next() until it returns false, write each reply
/// before taking the next (responses stay in order and memory stays at one
/// response), read more, repeat. Memory: the bytes of at most one incomplete
/// request (≤ header_limit, plus the last read) and one parser.
class Exchange {
 public:
  /// `router` must outlive the Exchange. `header_limit` (bytes, ≥ 64): the
  /// request line plus all header fields of one request.
  explicit Exchange(Router& router, std::size_t header_limit = 8192);
  ~Exchange();
  Exchange(const Exchange&) = delete;
  Exchange& operator=(const Exchange&) = delete;

  /// Room for up to `max` received bytes; commit(n ≤ max) says how many
  /// arrived. Only one prepare at a time.
  std::span<char> prepare(std::size_t max);
  void commit(std::size_t n);

  /// The next reply into `out` (true), or false when the buffered bytes hold
  /// no complete request yet, or after a closing reply (then closed() is true).
  bool next(Reply& out);

  /// Bytes received that belong to no answered request yet (a partial request).
  std::size_t buffered() const { return in_.size() - off_; }
  /// True once a reply with close was given.
  bool closed() const { return closed_; }
  /// Requests answered so far.
  uint64_t answered() const { return answered_; }

 private:
  struct Parser;
  Reply fail(unsigned status, std::string fault);
  void compact();

  Router& router_;
  std::size_t header_limit_;
  std::string in_;
  std::size_t off_ = 0;           // bytes of in_ already consumed by the parser
  std::size_t prepared_from_ = 0; // in_.size() before prepare()
  std::size_t request_bytes_ = 0; // bytes of the current request consumed so far
  std::unique_ptr<Parser> parser_;
  bool closed_ = false;
  uint64_t answered_ = 0;
};

/// Serializes `r` as an HTTP/1.1 response head with Content-Length,
/// Cache-Control: no-store and, when `close`, "Connection: close" (else, for an
/// HTTP/1.0 request, "Connection: keep-alive"). `head_only`: the body is left
/// out (HEAD) but Content-Length still gives its size (RFC 9110 §9.3.2).
Reply serialize(const Response& r, unsigned request_version, bool close, bool head_only);

}  // namespace zkfarm::http
